package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// readyz runs a Host whose one check fails, declared in the spec or added after New
// with AddCheck, and returns what /readyz and the Monitor answer while it serves.
func readyz(t *testing.T, late bool, check health.Check) (code int, body health.Answer, monitor health.Answer) {
	t.Helper()
	spec := host.AppSpec{
		ServiceName: "orders", Telemetry: quiet(),
		Probes:      health.ListenerConfig{Addr: "127.0.0.1:0"},
		Entrypoints: []host.Registration{{Entrypoint: newFake("api", &journal{})}},
	}
	if !late {
		spec.Checks = map[string]health.Check{"db": check}
	}
	serving := make(chan struct{})
	h, err := host.New(spec, env(), host.WithObserver(func(e host.Event) {
		if e.Stage == host.StageServe {
			close(serving)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if late {
		if err := h.AddCheck("db", check); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-serving
	res, err := http.Get("http://" + h.ProbeAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, body, h.Monitor().Evaluate(t.Context())
}

func TestAddCheck(t *testing.T) {
	down := health.CheckFunc(func(context.Context) error { return errors.New("db down") })
	for _, tc := range []struct {
		name   string
		check  health.Check
		code   int
		status string
	}{
		{"a late check on a shared dependency degrades readiness as a spec check does", down, 200, health.AnswerDegraded},
		{"a late gating check withdraws readiness as a spec check does", health.Gating(down), 503, health.AnswerFailing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, late := range []bool{false, true} {
				code, body, mon := readyz(t, late, tc.check)
				if code != tc.code || body.Status != tc.status || body.Checks["db"].OK {
					t.Errorf("late=%v: /readyz %d %+v, want %d %q with db failing", late, code, body, tc.code, tc.status)
				}
				if mon.Status != tc.status || len(mon.Checks) != 1 {
					t.Errorf("late=%v: the Monitor (gRPC health) says %+v, want %q over db", late, mon, tc.status)
				}
			}
		})
	}

	t.Run("a duplicate, an empty name or a nil check is refused, naming it", func(t *testing.T) {
		h, err := host.New(host.AppSpec{ServiceName: "orders", Telemetry: quiet(), Probes: probesOff(),
			Checks: map[string]health.Check{"db": down}}, env())
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name  string
			check health.Check
			field string
		}{{"db", down, `Checks["db"]`}, {"", down, `Checks[""]`}, {"cache", nil, `Checks["cache"]`}} {
			err := h.AddCheck(tc.name, tc.check)
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || len(ce.Problems) != 1 || ce.Problems[0].Field != tc.field {
				t.Errorf("AddCheck(%q, %v) = %v, want one problem naming %s", tc.name, tc.check, err, tc.field)
			}
		}
		if r := h.Monitor().Evaluate(t.Context()); len(r.Checks) != 0 {
			t.Errorf("a refused check was added: %+v", r)
		}
	})

	t.Run("after Run it is refused and not added", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			x := hosttest.New(t, host.AppSpec{ServiceName: "orders",
				Entrypoints: []host.Registration{{Entrypoint: newFake("api", &journal{})}}})
			h := x.Host()
			x.Start()
			x.WaitStage(host.StageServe)
			err := h.AddCheck("late", down)
			if !errors.Is(err, host.ErrRegisterAfterRun) {
				t.Errorf("AddCheck after Run = %v, want ErrRegisterAfterRun", err)
			}
			if r := h.Monitor().Evaluate(t.Context()); r.Status != health.AnswerOK || len(r.Checks) != 0 {
				t.Errorf("serving after a refused AddCheck: %+v, want ok without checks", r)
			}
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

type containerFunc func(*host.Builder) (host.Scope, error)

func (f containerFunc) Build(b *host.Builder) (host.Scope, error) { return f(b) }

// TestContainerCheckAfterItsMonitor: a check a container adds with Builder.Check
// after it built the Monitor without it is still run by the Monitor, which serves
// /readyz: the probe and the other transports never disagree on the checks.
func TestContainerCheckAfterItsMonitor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := health.Gating(health.CheckFunc(func(context.Context) error { return errors.New("spool full") }))
		x := hosttest.New(t, host.AppSpec{ServiceName: "orders",
			Entrypoints: []host.Registration{{Entrypoint: newFake("api", &journal{})}},
			Container: containerFunc(func(b *host.Builder) (host.Scope, error) {
				if _, err := b.Monitor(nil); err != nil {
					return nil, err
				}
				b.Check("spool", down)
				return nil, nil
			})})
		x.Start()
		x.WaitStage(host.StageServe)
		if r := x.Host().Monitor().Evaluate(t.Context()); r.Status != health.AnswerFailing || r.Checks["spool"].OK {
			t.Errorf("the Monitor says %+v, want failing on spool", r)
		}
		x.Stop()
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}
