package host

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/internal/prestop"
)

// probeState is a probe listener over a State, a Monitor of checks, and handlers
// for the other routes.
type probeState struct {
	st health.State
	l  *probeListener
}

func newProbes(t *testing.T, checks map[string]health.Check, r probeRoutes) *probeState {
	t.Helper()
	p := &probeState{}
	m, err := health.NewMonitor(health.MonitorConfig{Checks: checks}, &p.st)
	if err != nil {
		t.Fatal(err)
	}
	r.readyz, r.startupz = m, health.Startup(&p.st)
	for _, h := range []*http.Handler{&r.metrics, &r.lifecycle, &r.prestop} {
		if *h == nil {
			*h = http.NotFoundHandler()
		}
	}
	p.l = newProbeListener(health.ListenerConfig{Addr: "127.0.0.1:0"}, r, zap.NewNop())
	return p
}

func startProbes(t *testing.T, checks map[string]health.Check, r probeRoutes) *probeState {
	t.Helper()
	p := newProbes(t, checks, r)
	if err := p.l.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.l.close(context.Background()) })
	return p
}

func (p *probeState) url(path string) string { return "http://" + p.l.boundAddr().String() + path }

// probeClient does not keep connections: nothing of it outlives a test for goleak to see.
func probeClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func probeGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := probeClient().Get(url)
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

func TestProbeListenerServesEveryProbe(t *testing.T) {
	p := startProbes(t, map[string]health.Check{"db": health.CheckFunc(func(context.Context) error { return nil })}, probeRoutes{
		metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "servicewright_up 1\n")
		}),
		lifecycle: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"phase":"serve"}`)
		}),
		prestop: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "drained") }),
	})
	for _, step := range []struct {
		name string
		set  health.Status
		path string
		code int
		body string
	}{
		{"readyz before ready", health.StatusUnavailable, "/readyz", 503, `{"status":"unavailable","checks":{}}` + "\n"},
		{"startupz before ready", health.StatusUnavailable, "/startupz", 503, `{"status":"unavailable"}` + "\n"},
		{"livez before ready", health.StatusUnavailable, "/livez", 200, `{"status":"ok"}` + "\n"},
		{"readyz when ready", health.StatusReady, "/readyz", 200, `{"status":"ok","checks":{"db":{"ok":true,"detail":"ok"}}}` + "\n"},
		{"readyz exclude", health.StatusReady, "/readyz?exclude=db", 200, `{"status":"ok","checks":{}}` + "\n"},
		{"metrics", health.StatusReady, "/metrics", 200, "servicewright_up 1\n"},
		{"lifecycle", health.StatusReady, "/debug/lifecycle", 200, `{"phase":"serve"}`},
		{"prestop", health.StatusReady, prestop.Path, 200, "drained"},
		{"readyz draining", health.StatusDraining, "/readyz", 503, `{"status":"draining","checks":{}}` + "\n"},
		{"livez draining", health.StatusDraining, "/livez", 200, `{"status":"ok"}` + "\n"},
		{"startupz draining", health.StatusDraining, "/startupz", 200, `{"status":"ok"}` + "\n"},
	} {
		p.st.Set(step.set)
		if code, body := probeGet(t, p.url(step.path)); code != step.code || body != step.body {
			t.Fatalf("%s: got %d %q, want %d %q", step.name, code, body, step.code, step.body)
		}
	}
	for _, path := range []string{"/nope", "/", prestop.Path + "/x"} {
		if code, _ := probeGet(t, p.url(path)); code != 404 {
			t.Errorf("%s = %d, want 404", path, code)
		}
	}
}

// TestProbeListenerOneSpelling: each path has one spelling: encoded, doubled and
// dotted ones are 404, not redirected, and the handler never runs for them.
func TestProbeListenerOneSpelling(t *testing.T) {
	var hits atomic.Int32
	p := startProbes(t, nil, probeRoutes{prestop: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, r.URL.RawQuery)
	})})
	for _, path := range []string{"/%70restop", "//prestop", "/prestop/", "/./prestop", "/x/../prestop",
		"/%2Fprestop", "/readyz/", "//readyz", "/debug/%6cifecycle"} {
		if code, _ := probeGet(t, p.url(path)); code != 404 {
			t.Errorf("%s = %d, want 404", path, code)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the route ran %d times for other spellings of its path", n)
	}
	if code, body := probeGet(t, p.url("/prestop?x=1")); code != 200 || body != "x=1" || hits.Load() != 1 {
		t.Errorf("/prestop?x=1 = %d %q after %d hits, want the route with its query", code, body, hits.Load())
	}
}

func TestProbeListenerBindErrorNamesTheAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	p := newProbes(t, nil, probeRoutes{})
	p.l.addr = busy.Addr().String()
	err = p.l.start()
	if err == nil || !strings.HasPrefix(err.Error(), "probe listener: ") || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Fatalf("start = %v, want an error naming %s", err, busy.Addr())
	}
	if err := p.l.close(context.Background()); err != nil {
		t.Fatalf("close after a failed start: %v", err)
	}
}

func TestProbeListenerClose(t *testing.T) {
	t.Run("idempotent and releases the port", func(t *testing.T) {
		p := startProbes(t, nil, probeRoutes{})
		addr := p.l.boundAddr().String()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if err := p.l.close(context.Background()); err != nil {
					t.Errorf("close: %v", err)
				}
			})
		}
		wg.Wait()
		if err := p.l.close(context.Background()); err != nil {
			t.Fatalf("close again: %v", err)
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Fatal("still accepting after close")
		}
		if err := p.l.start(); !errors.Is(err, errProbesClosed) {
			t.Fatalf("start after close = %v", err)
		}
	})
	t.Run("waits for a probe in progress", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		p := startProbes(t, map[string]health.Check{"slow": health.CheckFunc(func(ctx context.Context) error {
			close(entered)
			<-release
			return nil
		})}, probeRoutes{})
		p.st.Set(health.StatusReady)
		got := make(chan int, 1)
		go func() {
			resp, err := probeClient().Get(p.url("/readyz"))
			if err != nil {
				got <- 0
				return
			}
			resp.Body.Close()
			got <- resp.StatusCode
		}()
		<-entered
		closed := make(chan error, 1)
		go func() { closed <- p.l.close(context.Background()) }()
		select {
		case err := <-closed:
			t.Fatalf("close returned (%v) while a probe was being answered", err)
		case <-time.After(50 * time.Millisecond): // a close that did not wait would have returned by now
		}
		close(release)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if code := <-got; code != 200 {
			t.Fatalf("probe in progress during close answered %d, want 200", code)
		}
	})
	t.Run("expired ctx closes hard and says so", func(t *testing.T) {
		release, entered := make(chan struct{}), make(chan struct{})
		p := startProbes(t, nil, probeRoutes{
			metrics: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { close(entered); <-release }),
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := probeClient().Get(p.url("/metrics")); err == nil {
				resp.Body.Close()
			}
		}()
		<-entered
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := p.l.close(ctx)
		close(release)
		<-done
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("close = %v, want the ctx's error", err)
		}
	})
	t.Run("before start", func(t *testing.T) {
		p := newProbes(t, nil, probeRoutes{})
		if err := p.l.close(context.Background()); err != nil || p.l.boundAddr() != nil {
			t.Fatalf("close = %v, boundAddr = %v", err, p.l.boundAddr())
		}
		if err := p.l.start(); !errors.Is(err, errProbesClosed) {
			t.Fatalf("start after close = %v", err)
		}
	})
}

func TestProbeListenerStartTwice(t *testing.T) {
	p := startProbes(t, nil, probeRoutes{})
	if err := p.l.start(); err == nil {
		t.Fatal("second start accepted")
	}
}
