package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
	"github.com/servicewright/servicewright/internal/prestop"
)

const testToken = "0123456789abcdef-token"

// preStopHost runs a Host with a probe listener, one fake entrypoint and one drain
// phase counted in runs, under the environment kv; it returns once the Host serves.
func preStopHost(t *testing.T, runs *atomic.Int32, reg *prometheus.Registry, log *zap.Logger, kv ...string) (*host.Host, func()) {
	t.Helper()
	lc := &hooks.Registry{}
	lc.AddDrainHook(hooks.DrainHook{Name: "hand-over", Run: func(context.Context, time.Duration) error {
		runs.Add(1)
		return nil
	}})
	serving := make(chan struct{})
	h, err := host.New(host.AppSpec{
		ServiceName: "prestop", Lifecycle: lc,
		Telemetry:   host.TelemetryConfig{Logger: log, Registry: reg},
		Probes:      health.ListenerConfig{Addr: "127.0.0.1:0"},
		Entrypoints: []host.Registration{{Entrypoint: newFake("http", &journal{})}},
		Budgets:     host.Budgets{DrainDelay: 100 * time.Millisecond},
	}, env(kv...), host.WithObserver(func(e host.Event) {
		if e.Stage == host.StageServe {
			close(serving)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	<-serving
	return h, func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// call sends method to the Host's prestop.Path with the token (none when "").
func call(t *testing.T, h *host.Host, method, path, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+h.ProbeAddr()+path, nil)
	if token != "" {
		req.Header.Set(prestop.Header, token)
	}
	req.Header.Set("User-Agent", "prestop-test")
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestPreStopEndpoint: the probe listener serves Host.PreStop at /prestop (GET and
// POST) to a caller with the token: readiness is withdrawn, the phases run once, and
// the stop does not run them again; other methods get 405.
func TestPreStopEndpoint(t *testing.T) {
	var runs atomic.Int32
	core, logs := observer.New(zap.InfoLevel)
	h, stop := preStopHost(t, &runs, nil, zap.New(core), "SW_PRESTOP_TOKEN", testToken)

	if code, _ := call(t, h, http.MethodDelete, prestop.Path, testToken); code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE %s = %d, want 405", prestop.Path, code)
	}
	if h.Readiness() != health.StatusReady {
		t.Errorf("readiness %s after a refused DELETE, want ready", h.Readiness())
	}
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		code, body := call(t, h, method, prestop.Path+"?x=1", testToken)
		if code != 200 || body != "{\"status\":\"draining\"}\n" {
			t.Errorf("%s %s = %d %q", method, prestop.Path, code, body)
		}
	}
	if h.Readiness() != health.StatusDraining || runs.Load() != 1 || h.Stage() != host.StageServe {
		t.Errorf("after /prestop: readiness %s, %d phase runs, stage %s; want draining, 1, serve",
			h.Readiness(), runs.Load(), h.Stage())
	}
	accepted := logs.FilterMessage("prestop: accepted").All()
	if len(accepted) != 2 {
		t.Fatalf("%d accepted lines, want one per call", len(accepted))
	}
	if f := accepted[0].ContextMap(); f["caller"] != "http" || f["user_agent"] != "prestop-test" ||
		!strings.HasPrefix(f["remote_addr"].(string), "127.0.0.1:") || f["first"] != true {
		t.Errorf("accepted line %v, want the caller's address and user agent", f)
	}
	stop()
	if runs.Load() != 1 {
		t.Errorf("the phase ran %d times in all, want once", runs.Load())
	}
	for _, e := range logs.All() {
		if strings.Contains(e.Message+fmt.Sprint(e.ContextMap()), testToken) {
			t.Errorf("the token was logged: %v", e)
		}
	}
}

// TestPreStopRefused: without the token, with a wrong one, or with none configured,
// /prestop changes nothing: 403, readiness ready, phases not run; each refusal is
// counted by reason and logged with its caller, at most one line every 10 s.
func TestPreStopRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    []string
		token  string
		reason string
	}{
		{"no token configured, none sent", nil, "", "not_configured"},
		{"no token configured, one sent", nil, testToken, "not_configured"},
		{"no token sent", []string{"SW_PRESTOP_TOKEN", testToken}, "", "no_credential"},
		{"a wrong token", []string{"SW_PRESTOP_TOKEN", testToken}, testToken + "x", "wrong_credential"},
		{"a prefix of the token", []string{"SW_PRESTOP_TOKEN", testToken}, testToken[:len(testToken)-1], "wrong_credential"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			reg := prometheus.NewRegistry()
			core, logs := observer.New(zap.InfoLevel)
			h, stop := preStopHost(t, &runs, reg, zap.New(core), tc.env...)
			defer stop()
			for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodGet} {
				if code, body := call(t, h, method, prestop.Path, tc.token); code != http.StatusForbidden ||
					body != "{\"status\":\"forbidden\"}\n" {
					t.Errorf("%s = %d %q, want 403", method, code, body)
				}
			}
			if h.Readiness() != health.StatusReady || runs.Load() != 0 || h.Snapshot().PreStop != nil {
				t.Errorf("after refused calls: readiness %s, %d phase runs, prestop %+v; want nothing changed",
					h.Readiness(), runs.Load(), h.Snapshot().PreStop)
			}
			if n := testutil.ToFloat64(mustCounter(t, reg, tc.reason)); n != 3 {
				t.Errorf("servicewright_prestop_refused_total{reason=%q} = %v, want 3", tc.reason, n)
			}
			lines := logs.FilterMessage("prestop: refused; readiness unchanged").All()
			if len(lines) != 1 {
				t.Fatalf("%d refusal lines for 3 refusals within 10s, want 1", len(lines))
			}
			if f := lines[0].ContextMap(); f["reason"] != tc.reason || f["user_agent"] != "prestop-test" || f["remote_addr"] == "" {
				t.Errorf("refusal line %v, want its reason and caller", f)
			}
		})
	}
}

func mustCounter(t *testing.T, reg *prometheus.Registry, reason string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "servicewright_prestop_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == reason {
				c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
				c.Add(m.GetCounter().GetValue())
				return c
			}
		}
	}
	t.Fatalf("no servicewright_prestop_refused_total{reason=%q}", reason)
	return nil
}

// TestPreStopToken: the token comes from SW_PRESTOP_TOKEN or SW_PRESTOP_TOKEN_FILE;
// a short one, both at once or an unreadable file is a ConfigError naming the
// variable, and never quoting the token.
func TestPreStopToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tiny-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("from a file, trimmed", func(t *testing.T) {
		var runs atomic.Int32
		h, stop := preStopHost(t, &runs, nil, zap.NewNop(), "SW_PRESTOP_TOKEN_FILE", file)
		defer stop()
		if code, _ := call(t, h, http.MethodGet, prestop.Path, testToken); code != 200 || h.Readiness() != health.StatusDraining {
			t.Errorf("/prestop with the file's token = %d, readiness %s", code, h.Readiness())
		}
	})
	for _, tc := range []struct {
		name  string
		env   []string
		field string
	}{
		{"too short", []string{"SW_PRESTOP_TOKEN", "tiny-secret"}, "SW_PRESTOP_TOKEN"},
		{"too short in a file", []string{"SW_PRESTOP_TOKEN_FILE", short}, "SW_PRESTOP_TOKEN_FILE"},
		{"both", []string{"SW_PRESTOP_TOKEN", testToken, "SW_PRESTOP_TOKEN_FILE", file}, "SW_PRESTOP_TOKEN" + ", " + "SW_PRESTOP_TOKEN_FILE"},
		{"an unreadable file", []string{"SW_PRESTOP_TOKEN_FILE", filepath.Join(dir, "missing")}, "SW_PRESTOP_TOKEN_FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := host.New(host.AppSpec{ServiceName: "x", Telemetry: quiet()}, env(tc.env...))
			var ce *fault.ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != tc.field {
				t.Fatalf("New = %v, want a ConfigError naming %s", err, tc.field)
			}
			if strings.Contains(err.Error(), "tiny-secret") || strings.Contains(err.Error(), testToken) {
				t.Errorf("the error quotes the token: %v", err)
			}
		})
	}
}

// TestPreStopPending: a PreStop that no stop follows within the grace period is
// logged as a warning, and shows in servicewright_prestop_pending_seconds and in
// /debug/lifecycle until the stop comes.
func TestPreStopPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.InfoLevel)
		reg := prometheus.NewRegistry()
		x := hosttest.Start(t, host.AppSpec{ServiceName: "x", Telemetry: host.TelemetryConfig{Logger: zap.New(core), Registry: reg},
			Budgets: host.Budgets{DrainDelay: time.Second}}, env("TERMINATION_GRACE_PERIOD", "20"))
		x.WaitStage(host.StageServe)
		h := x.Host()
		if h.Snapshot().PreStop != nil {
			t.Errorf("/debug/lifecycle has a prestop before any: %+v", h.Snapshot().PreStop)
		}
		if err := h.PreStop(context.Background()); err != nil { // returns after the 1s drain delay
			t.Fatal(err)
		}
		pending := func() float64 { return gauge(t, reg, "servicewright_prestop_pending_seconds") }
		time.Sleep(18 * time.Second)
		synctest.Wait()
		if n := logs.FilterMessageSnippet("no stop followed").Len(); n != 0 || pending() != 19 || h.Snapshot().PreStop.Overdue {
			t.Errorf("19s after PreStop: %d warnings, pending %v, %+v; want none yet, 19, not overdue", n, pending(), h.Snapshot().PreStop)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		warn := logs.FilterMessageSnippet("no stop followed").All()
		if len(warn) != 1 || warn[0].Level != zap.WarnLevel {
			t.Fatalf("at the 20s grace: %v, want one warning", warn)
		}
		doc, _ := json.Marshal(h.Snapshot())
		if !strings.Contains(string(doc), `"prestop":{"requested_at":`) || !strings.Contains(string(doc), `"pending_seconds":20,"overdue":true,"grace":"20s"`) {
			t.Errorf("/debug/lifecycle = %s, want the pending PreStop", doc)
		}
		x.Stop()
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
		if p := h.Snapshot().PreStop; pending() != 0 || p.PendingSeconds != 0 || p.Overdue {
			t.Errorf("after the stop: pending %v, %+v; want 0, not overdue", pending(), p)
		}
	})
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
