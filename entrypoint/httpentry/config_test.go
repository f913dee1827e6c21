package httpentry

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/transport"
)

// fields returns the fields named by err, which must be a *fault.ConfigError.
func fields(t *testing.T, err error) []string {
	t.Helper()
	ce, ok := errors.AsType[*fault.ConfigError](err)
	if !ok {
		t.Fatalf("error = %v (%T), want *fault.ConfigError", err, err)
	}
	var fs []string
	for _, p := range ce.Problems {
		fs = append(fs, p.Field)
	}
	return fs
}

func TestNew(t *testing.T) {
	t.Run("the zero Config takes the defaults", func(t *testing.T) {
		s, err := New(Config{}, http.NotFoundHandler())
		if err != nil {
			t.Fatal(err)
		}
		want := Config{
			Name: "http", Addr: ":8080", ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, IdleTimeout: time.Minute,
			MaxHeaderBytes: 1 << 20, MaxHeaderFields: 100, StreamDrainWindow: 5 * time.Second, RetryAfter: time.Second,
			MaxConns: transport.DefaultMaxConns(),
		}
		if s.cfg != want {
			t.Errorf("resolved Config = %+v, want %+v", s.cfg, want)
		}
		if s.srv.ReadHeaderTimeout != want.ReadHeaderTimeout || s.srv.MaxHeaderBytes != want.MaxHeaderBytes ||
			s.srv.IdleTimeout != want.IdleTimeout || s.srv.ReadTimeout != want.ReadTimeout || s.srv.WriteTimeout != 0 {
			t.Errorf("http.Server not configured from Config: %+v", s.srv)
		}
		if s.retryAfter != "1" {
			t.Errorf("Retry-After = %q, want 1", s.retryAfter)
		}
	})

	t.Run("bad config lists every problem with its field", func(t *testing.T) {
		_, err := New(Config{
			Addr:              "127.0.0.1:1",
			ReadHeaderTimeout: -1, ReadTimeout: -1, WriteTimeout: -1, IdleTimeout: -1,
			MaxHeaderBytes: -1, StreamDrainWindow: -1, RetryAfter: -1, MaxConns: -1,
			CertFile: "only-a-cert.pem",
		}, nil, WithListener(nil))
		got := fields(t, err)
		want := []string{
			"ReadHeaderTimeout", "ReadTimeout", "WriteTimeout", "IdleTimeout", "StreamDrainWindow",
			"RetryAfter", "MaxHeaderBytes", "MaxConns", "CertFile, KeyFile", "handler", "WithListener",
		}
		if !slices.Equal(got, want) {
			t.Errorf("fields = %v, want %v\n%v", got, want, err)
		}
	})

	t.Run("Addr and a listener together are refused", func(t *testing.T) {
		ln := mustListen(t)
		defer ln.Close()
		_, err := New(Config{Addr: ":8080"}, http.NotFoundHandler(), WithListener(ln))
		if got := fields(t, err); !slices.Equal(got, []string{"Addr"}) {
			t.Errorf("fields = %v, want [Addr]", got)
		}
	})

	t.Run("a missing certificate file is named", func(t *testing.T) {
		dir := t.TempDir()
		cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		if err := os.WriteFile(key, []byte("not a key"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := New(Config{CertFile: cert, KeyFile: key}, http.NotFoundHandler())
		ce, _ := errors.AsType[*fault.ConfigError](err)
		if ce == nil || len(ce.Problems) != 1 || ce.Problems[0].Field != "CertFile" {
			t.Fatalf("New = %v, want one CertFile problem", err)
		}
		if want := `cannot read "` + cert + `"`; !strings.Contains(ce.Problems[0].Reason, want) {
			t.Errorf("reason = %q, want it to contain %q", ce.Problems[0].Reason, want)
		}
	})

	t.Run("an invalid key pair names both files", func(t *testing.T) {
		dir := t.TempDir()
		cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		os.WriteFile(cert, []byte("junk"), 0o600)
		os.WriteFile(key, []byte("junk"), 0o600)
		_, err := New(Config{CertFile: cert, KeyFile: key}, http.NotFoundHandler())
		if got := fields(t, err); !slices.Equal(got, []string{"CertFile, KeyFile"}) {
			t.Errorf("fields = %v", got)
		}
		if !strings.Contains(err.Error(), cert) || !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name both files", err)
		}
	})

	t.Run("Retry-After is rounded up to whole seconds", func(t *testing.T) {
		for d, want := range map[time.Duration]string{time.Millisecond: "1", 2 * time.Second: "2", 2500 * time.Millisecond: "3"} {
			if got := retryAfterHeader(d); got != want {
				t.Errorf("retryAfterHeader(%v) = %q, want %q", d, got, want)
			}
		}
	})
}
