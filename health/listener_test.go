package health_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

func startListener(t *testing.T, cfg health.ListenerConfig, src health.Source, opts health.ListenerOptions) *health.Listener {
	t.Helper()
	l, err := health.NewListener(cfg, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// client does not keep connections: nothing of it outlives a test for goleak to see.
func client() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
}

func text(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestListenerServesEveryProbe(t *testing.T) {
	var s health.State
	l := startListener(t, health.ListenerConfig{Addr: "127.0.0.1:0"}, &s, health.ListenerOptions{
		Checks: map[string]health.Check{"db": health.CheckFunc(ok)},
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "servicewright_up 1\n")
		}),
		Lifecycle: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"phase":"serve"}`)
		}),
	})
	base := "http://" + l.Addr().String()
	c := client()
	for _, step := range []struct {
		name string
		set  health.Status
		path string
		code int
		body string
	}{
		{"readyz before ready", health.Unavailable, "/readyz", 503, `{"status":"unavailable","checks":{}}` + "\n"},
		{"startupz before ready", health.Unavailable, "/startupz", 503, `{"status":"unavailable"}` + "\n"},
		{"livez before ready", health.Unavailable, "/livez", 200, `{"status":"ok"}` + "\n"},
		{"readyz when ready", health.Ready, "/readyz", 200, `{"status":"ok","checks":{"db":{"ok":true,"detail":"ok"}}}` + "\n"},
		{"readyz exclude", health.Ready, "/readyz?exclude=db", 200, `{"status":"ok","checks":{}}` + "\n"},
		{"metrics", health.Ready, "/metrics", 200, "servicewright_up 1\n"},
		{"lifecycle", health.Ready, "/debug/lifecycle", 200, `{"phase":"serve"}`},
		{"readyz draining", health.Draining, "/readyz", 503, `{"status":"draining","checks":{}}` + "\n"},
		{"livez draining", health.Draining, "/livez", 200, `{"status":"ok"}` + "\n"},
		{"startupz draining", health.Draining, "/startupz", 200, `{"status":"ok"}` + "\n"},
	} {
		s.Set(step.set)
		if code, body := text(t, c, base+step.path); code != step.code || body != step.body {
			t.Fatalf("%s: got %d %q, want %d %q", step.name, code, body, step.code, step.body)
		}
	}
	if code, _ := text(t, c, base+"/nope"); code != 404 {
		t.Fatalf("unknown path: %d", code)
	}
}

func TestListenerWithoutMetricsOrLifecycle(t *testing.T) {
	l := startListener(t, health.ListenerConfig{Addr: "127.0.0.1:0"}, ready(), health.ListenerOptions{})
	for _, p := range []string{"/metrics", "/debug/lifecycle"} {
		if code, _ := text(t, client(), "http://"+l.Addr().String()+p); code != 404 {
			t.Fatalf("%s: %d", p, code)
		}
	}
}

func TestListenerBindErrorNamesTheAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	l, err := health.NewListener(health.ListenerConfig{Addr: busy.Addr().String()}, ready(), health.ListenerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Start()
	if err == nil || !strings.HasPrefix(err.Error(), "probe listener: ") || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Fatalf("Start = %v, want an error naming %s", err, busy.Addr())
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatalf("Close after a failed Start: %v", err)
	}
}

func TestListenerClose(t *testing.T) {
	t.Run("idempotent and releases the port", func(t *testing.T) {
		l := startListener(t, health.ListenerConfig{Addr: "127.0.0.1:0"}, ready(), health.ListenerOptions{})
		addr := l.Addr().String()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if err := l.Close(context.Background()); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		}
		wg.Wait()
		if err := l.Close(context.Background()); err != nil {
			t.Fatalf("Close again: %v", err)
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Fatal("still accepting after Close")
		}
		if err := l.Start(); !errors.Is(err, health.ErrListenerClosed) {
			t.Fatalf("Start after Close = %v", err)
		}
	})
	t.Run("waits for a probe in progress", func(t *testing.T) {
		entered := make(chan struct{})
		l := startListener(t, health.ListenerConfig{Addr: "127.0.0.1:0"}, ready(), health.ListenerOptions{
			Checks: map[string]health.Check{"slow": health.CheckFunc(func(ctx context.Context) error {
				close(entered)
				time.Sleep(200 * time.Millisecond)
				return nil
			})},
		})
		got := make(chan int, 1)
		go func() {
			resp, err := client().Get("http://" + l.Addr().String() + "/readyz")
			if err != nil {
				got <- 0
				return
			}
			resp.Body.Close()
			got <- resp.StatusCode
		}()
		<-entered
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if code := <-got; code != 200 {
			t.Fatalf("probe in progress during Close answered %d, want 200", code)
		}
	})
	t.Run("expired ctx closes hard and says so", func(t *testing.T) {
		release := make(chan struct{})
		entered := make(chan struct{})
		l := startListener(t, health.ListenerConfig{Addr: "127.0.0.1:0"}, ready(), health.ListenerOptions{
			Metrics: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { close(entered); <-release }),
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := client().Get("http://" + l.Addr().String() + "/metrics"); err == nil {
				resp.Body.Close()
			}
		}()
		<-entered
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := l.Close(ctx)
		close(release)
		<-done
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close = %v, want DeadlineExceeded", err)
		}
	})
	t.Run("before Start", func(t *testing.T) {
		l, err := health.NewListener(health.ListenerConfig{}, ready(), health.ListenerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(context.Background()); err != nil || l.Addr() != nil {
			t.Fatalf("Close = %v, Addr = %v", err, l.Addr())
		}
		if err := l.Start(); !errors.Is(err, health.ErrListenerClosed) {
			t.Fatalf("Start after Close = %v", err)
		}
	})
}

func TestListenerDisabledBindsNothing(t *testing.T) {
	l, err := health.NewListener(health.ListenerConfig{Disabled: true}, ready(), health.ListenerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(); err != nil || l.Addr() != nil {
		t.Fatalf("Start = %v, Addr = %v", err, l.Addr())
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestListenerStartTwice(t *testing.T) {
	l := startListener(t, health.ListenerConfig{Addr: "127.0.0.1:0"}, ready(), health.ListenerOptions{})
	if err := l.Start(); err == nil {
		t.Fatal("second Start accepted")
	}
}

func TestListenerConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   health.ListenerConfig
		field string // "" when valid
	}{
		{"zero value is valid", health.ListenerConfig{}, ""},
		{"explicit address", health.ListenerConfig{Addr: "127.0.0.1:8079", CheckTimeout: time.Second}, ""},
		{"port zero", health.ListenerConfig{Addr: ":0"}, ""},
		{"negative timeout", health.ListenerConfig{CheckTimeout: -time.Millisecond}, "CheckTimeout"},
		{"no port", health.ListenerConfig{Addr: "localhost"}, "Addr"},
		{"named port", health.ListenerConfig{Addr: ":http"}, "Addr"},
		{"port out of range", health.ListenerConfig{Addr: ":70000"}, "Addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || len(ce.Problems) != 1 || ce.Problems[0].Field != tc.field {
				t.Fatalf("Validate = %v, want one problem on %s", err, tc.field)
			}
		})
	}
}

func TestNewListenerListsEveryProblem(t *testing.T) {
	_, err := health.NewListener(health.ListenerConfig{Addr: "nope", CheckTimeout: -1}, nil,
		health.ListenerOptions{Checks: map[string]health.Check{"redis": nil}})
	ce, ok := errors.AsType[*fault.ConfigError](err)
	if !ok || len(ce.Problems) != 4 {
		t.Fatalf("NewListener = %v, want 4 problems", err)
	}
	for _, f := range []string{"CheckTimeout", "Addr", "Source", `Checks["redis"]`} {
		if !strings.Contains(err.Error(), f+": ") {
			t.Errorf("%q not named in %v", f, err)
		}
	}
}
