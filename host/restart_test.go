package host_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// flaky is a Runner-based entrypoint whose work fails the first failures times it
// runs, then takes work until the drain.
type flaky struct {
	*entrypoint.Runner
	failures int32
	runs     atomic.Int32
}

func newFlaky(failures int32) *flaky {
	return &flaky{Runner: entrypoint.NewRunner("relay"), failures: failures}
}

func (f *flaky) Name() string                   { return "relay" }
func (f *flaky) Bind(ctx context.Context) error { return f.Runner.Bind(ctx, nil) }
func (f *flaky) Serve(ctx context.Context, stop <-chan struct{}) error {
	return f.Runner.Serve(ctx, stop, func(ctx context.Context, draining <-chan struct{}) error {
		if f.runs.Add(1) <= f.failures {
			return errors.New("backend gone")
		}
		select {
		case <-draining:
		case <-ctx.Done():
		}
		return nil
	})
}

// A failed non-essential entrypoint is restarted by the Host with the shared
// jittered backoff, each restart logged and counted; a Runner serves again. With
// GatesReadiness, readiness is withdrawn while it is down and returns when it serves.
func TestNonEssentialEntrypointIsRestarted(t *testing.T) {
	for _, gates := range []bool{false, true} {
		name := "restarted"
		if gates {
			name = "restarted, gating readiness while down"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				core, logs := observer.New(zap.InfoLevel)
				reg := prometheus.NewRegistry()
				f := newFlaky(2)
				x := hosttest.New(t, host.AppSpec{ServiceName: "orders",
					Entrypoints: []host.Registration{
						{Entrypoint: newFake("api", &journal{})},
						{Entrypoint: f, NonEssential: true, GatesReadiness: gates},
					},
					Telemetry: host.TelemetryConfig{Logger: zap.New(core), Registry: reg},
				})
				began := time.Now()
				x.Start()
				x.WaitStage(host.StageServe)
				synctest.Wait() // the first run failed; its restart is scheduled
				r := x.Host().Monitor().Evaluate(t.Context())
				if gates && (r.Status != health.AnswerFailing || r.Checks["entrypoint:relay"].OK) {
					t.Errorf("while relay is down: %+v, want failing on entrypoint:relay", r)
				}
				if !gates && r.Status != health.AnswerOK {
					t.Errorf("while relay is down: %+v, want ok (it does not gate)", r)
				}
				time.Sleep(4 * time.Second) // two restarts: ≤ 1 s, then ≤ 2 s
				synctest.Wait()
				if n := f.runs.Load(); n != 3 {
					t.Fatalf("the work ran %d times in %s, want 3 (two failures, two restarts)", n, time.Since(began))
				}
				if st := lifecycleState(x.Host(), "relay"); st != "serving" {
					t.Errorf("relay is %q after its restarts, want serving", st)
				}
				if r := x.Host().Monitor().Evaluate(t.Context()); r.Status != health.AnswerOK {
					t.Errorf("after the restart: %+v, want ok", r)
				}
				if got := counterSum(t, reg, "servicewright_entrypoint_restarts_total"); got != 2 {
					t.Errorf("servicewright_entrypoint_restarts_total = %v, want 2", got)
				}
				if n := logs.FilterMessage("restarting non-essential entrypoint").Len(); n != 2 {
					t.Errorf("%d restarts logged, want 2", n)
				}
				failed := logs.FilterMessageSnippet("non-essential entrypoint failed").All()
				if len(failed) != 2 {
					t.Fatalf("%d failures logged, want 2", len(failed))
				}
				first, second := failed[0].ContextMap()["restart_in"], failed[1].ContextMap()["restart_in"]
				if d, ok := first.(time.Duration); !ok || d < 500*time.Millisecond || d > time.Second {
					t.Errorf("first restart_in = %v, want in [0.5s, 1s]", first)
				}
				if d, ok := second.(time.Duration); !ok || d < time.Second || d > 2*time.Second {
					t.Errorf("second restart_in = %v, want in [1s, 2s] (doubled)", second)
				}
				x.Stop()
				if err := x.Wait(); err != nil {
					t.Errorf("Run = %v, want nil: a non-essential entrypoint's failure does not fail the run", err)
				}
			})
		})
	}
}

// An entrypoint that cannot serve twice refuses the restart and stays failed, said
// once and counted as one failure; the others keep serving.
func TestRestartRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.InfoLevel)
		reg := prometheus.NewRegistry()
		x := hosttest.New(t, host.AppSpec{ServiceName: "orders",
			Entrypoints: []host.Registration{
				{Entrypoint: newFake("api", &journal{})},
				{Entrypoint: newOnce(), NonEssential: true},
			},
			Telemetry: host.TelemetryConfig{Logger: zap.New(core), Registry: reg},
		})
		x.Start()
		x.WaitStage(host.StageServe)
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := logs.FilterMessage("restarting non-essential entrypoint").Len(); n != 1 {
			t.Errorf("%d restarts, want 1", n)
		}
		if n := logs.FilterMessageSnippet("cannot be restarted").Len(); n != 1 {
			t.Errorf("%d lines saying it cannot be restarted, want 1", n)
		}
		if st := lifecycleState(x.Host(), "once"); st != "failed" {
			t.Errorf("once is %q, want failed", st)
		}
		if got := counterSum(t, reg, "servicewright_entrypoint_failures_total"); got != 1 {
			t.Errorf("servicewright_entrypoint_failures_total = %v, want 1: the refused restart is the same failure", got)
		}
		x.Stop()
		_ = x.Wait()
	})
}

// GatesReadiness on an essential entrypoint is a ConfigError.
func TestGatesReadinessNeedsNonEssential(t *testing.T) {
	_, err := host.New(host.AppSpec{ServiceName: "x", Telemetry: quiet(), Probes: health.ListenerConfig{Disabled: true},
		Entrypoints: []host.Registration{{Entrypoint: newFlaky(0), GatesReadiness: true}}})
	if err == nil || !strings.Contains(err.Error(), `Entrypoints["relay"].GatesReadiness: is for a NonEssential entrypoint`) {
		t.Fatalf("New = %v, want a ConfigError naming GatesReadiness", err)
	}
}

// once serves once and fails; a second Serve is out of turn, as for any entrypoint
// whose Base was not rearmed.
type once struct {
	base entrypoint.Base
}

func newOnce() *once {
	o := &once{}
	_ = o.base.Init("once", entrypoint.Telemetry{}, nil)
	return o
}

func (o *once) Name() string { return o.base.Name() }
func (o *once) Bind(context.Context) error {
	o.base.Lock()
	defer o.base.Unlock()
	if err := o.base.Bind(); err != nil {
		return err
	}
	o.base.Bound()
	return nil
}
func (o *once) Serve(context.Context, <-chan struct{}) error {
	o.base.Lock()
	defer o.base.Unlock()
	if _, err := o.base.Serve(); err != nil {
		return err
	}
	return errors.New("lost its backend")
}
func (o *once) Drain(context.Context) error {
	o.base.Lock()
	defer o.base.Unlock()
	o.base.Drain()
	return nil
}
func (o *once) Stop(context.Context) error {
	o.base.Lock()
	defer o.base.Unlock()
	o.base.Stop()
	return nil
}

func lifecycleState(h *host.Host, name string) string {
	for _, e := range h.Snapshot().Entrypoints {
		if e.Name == name {
			return e.State
		}
	}
	return ""
}

// counterSum is the sum of the counter name's series in reg.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
