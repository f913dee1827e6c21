package sentrykit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/sentrykit"
)

// TestFlushSaysWhatWasNotDelivered: a Flush fails the same way whether the backend
// hangs, refuses the connection or answers an error, never naming the DSN's key; it
// succeeds once the events are delivered.
func TestFlushSaysWhatWasNotDelivered(t *testing.T) {
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	ok := newStandIn(t)
	for _, c := range []struct {
		name, addr string
		fails      bool
	}{
		{"hung", testenv.BlackHole(t), true},
		{"refused", testenv.RefusedAddr(t), true},
		{"503", strings.TrimPrefix(unavailable.URL, "http://"), true},
		{"delivered", strings.TrimPrefix(ok.srv.URL, "http://"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := sentrykit.New(sentrykit.Config{DSN: "http://flushsecret@" + c.addr + "/1"},
				sentrykit.WithEnv(func(string) (string, bool) { return "", false }))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			r.Report(context.Background(), errors.New("boom"), nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err = r.Flush(ctx)
			if c.fails != (err != nil) {
				t.Fatalf("Flush = %v, want an error: %v", err, c.fails)
			}
			if err != nil && strings.Contains(err.Error(), "flushsecret") {
				t.Errorf("Flush's error names the DSN's key: %v", err)
			}
			if !c.fails {
				if err := r.Flush(ctx); err != nil {
					t.Errorf("a second Flush with nothing queued = %v", err)
				}
			}
		})
	}
}
