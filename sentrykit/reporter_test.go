package sentrykit_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/sentrykit"
)

// event is the part of a Sentry event the tests read.
type event struct {
	Message   string            `json:"message"`
	Tags      map[string]string `json:"tags"`
	Release   string            `json:"release"`
	Server    string            `json:"server_name"`
	Env       string            `json:"environment"`
	Contexts  map[string]map[string]any
	Exception []struct {
		Type       string `json:"type"`
		Value      string `json:"value"`
		Stacktrace struct {
			Frames []struct {
				Function string `json:"function"`
				Module   string `json:"module"`
			} `json:"frames"`
		} `json:"stacktrace"`
	} `json:"exception"`
}

// standIn is a Sentry endpoint on loopback that keeps the events of the envelopes
// it is sent.
type standIn struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events []event
}

func newStandIn(t *testing.T) *standIn {
	s := &standIn{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, _ := io.ReadAll(body)
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		sc.Scan() // envelope header
		for sc.Scan() {
			var item struct{ Type string }
			_ = json.Unmarshal(sc.Bytes(), &item)
			if !sc.Scan() {
				break
			}
			if item.Type == "event" {
				var ev event
				if err := json.Unmarshal(sc.Bytes(), &ev); err == nil {
					s.mu.Lock()
					s.events = append(s.events, ev)
					s.mu.Unlock()
				}
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *standIn) dsn() string {
	return strings.Replace(s.srv.URL, "http://", "http://secretkey@", 1) + "/42"
}

func (s *standIn) got() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event(nil), s.events...)
}

func noEnv(string) (string, bool) { return "", false }

func explode() error { panic("kaboom") }

func TestReporter(t *testing.T) {
	t.Run("an event arrives by Flush with its tags, trace and release", func(t *testing.T) {
		s := newStandIn(t)
		rep, err := sentrykit.New(sentrykit.Config{DSN: s.dsn(), Environment: "test", Release: "v1.2.3"}, sentrykit.WithEnv(noEnv))
		if err != nil {
			t.Fatal(err)
		}
		defer rep.Close()
		rep.Report(context.Background(), errors.New("entrypoint \"chaos\" failed"), map[string]string{
			fault.TagEntrypoint: "chaos", fault.TagInstance: "orders-7d9f", fault.TagTraceID: "0af7651916cd43dd8448eb211c80319c", fault.TagSpanID: "b7ad6b7169203331"})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rep.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		evs := s.got()
		if len(evs) != 1 {
			t.Fatalf("got %d events, want 1", len(evs))
		}
		ev := evs[0]
		if ev.Tags[fault.TagEntrypoint] != "chaos" || ev.Release != "v1.2.3" || ev.Env != "test" || ev.Server != "orders-7d9f" {
			t.Errorf("event = %+v", ev)
		}
		if ev.Contexts["trace"]["trace_id"] != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("trace context = %v", ev.Contexts["trace"])
		}
	})

	t.Run("a recovered panic arrives with the panicking function as the newest frame", func(t *testing.T) {
		s := newStandIn(t)
		rep, err := sentrykit.New(sentrykit.Config{DSN: s.dsn()}, sentrykit.WithEnv(noEnv))
		if err != nil {
			t.Fatal(err)
		}
		defer rep.Close()
		perr := safe.Call("hook", explode)
		rep.Report(context.Background(), perr, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rep.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		evs := s.got()
		if len(evs) != 1 || len(evs[0].Exception) != 1 {
			t.Fatalf("got %+v", evs)
		}
		exc := evs[0].Exception[0]
		frames := exc.Stacktrace.Frames
		if exc.Type != "panic" || len(frames) < 2 || frames[len(frames)-1].Function != "explode" {
			t.Errorf("exception %s with frames %+v, want a panic whose newest frame is explode", exc.Type, frames)
		}
	})

	t.Run("configuration comes from the SENTRY variables and a bad DSN is never repeated", func(t *testing.T) {
		env := map[string]string{"SENTRY_DSN": "ftp://secretkey@127.0.0.1:1/42"}
		_, err := sentrykit.New(sentrykit.Config{}, sentrykit.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok || ce.Problems[0].Field != "SENTRY_DSN" || strings.Contains(err.Error(), "secretkey") {
			t.Errorf("New = %v, want a ConfigError naming SENTRY_DSN without its key", err)
		}
		_, err = sentrykit.New(sentrykit.Config{}, sentrykit.WithEnv(noEnv))
		if ce, ok := errors.AsType[*fault.ConfigError](err); !ok || ce.Problems[0].Field != "DSN" {
			t.Errorf("New without a DSN = %v, want a ConfigError naming DSN", err)
		}
	})
}
