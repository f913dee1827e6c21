package host_test

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/host/hosttest"
)

// phaseSpec is a service with one entrypoint and one drain hook that records its runs.
func phaseSpec(j *journal) host.AppSpec {
	lc := &hooks.Registry{}
	lc.AddDrainHook(hooks.DrainHook{Name: "hand-over", Run: func(context.Context, time.Duration) error {
		time.Sleep(time.Second)
		j.addReady("phase")
		return nil
	}})
	return host.AppSpec{
		Entrypoints: []host.Registration{{Entrypoint: newFake("http", j)}},
		Lifecycle:   lc,
		Budgets:     host.Budgets{DrainDelay: 5 * time.Second},
	}
}

func TestPreStop(t *testing.T) {
	t.Run("withdraws readiness, waits the delay, runs the phases; the shutdown skips both", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			x := start(t, j, phaseSpec(j))
			x.WaitStage(host.StageServe)
			h := x.Host()
			began := time.Now()
			returned := make(chan error)
			go func() { returned <- h.PreStop(context.Background()) }()
			synctest.Wait()
			if h.Readiness() != health.StatusDraining {
				t.Errorf("readiness %s right after PreStop, want draining", h.Readiness())
			}
			if err := <-returned; err != nil || time.Since(began) != 6*time.Second {
				t.Errorf("PreStop = %v after %s, want nil after the 5s delay + the 1s phase", err, time.Since(began))
			}
			if h.Stage() != host.StageServe || slices.Contains(names(j), "http.Drain") {
				t.Errorf("PreStop stopped something: stage %s, %v", h.Stage(), j.get())
			}
			if err := h.PreStop(context.Background()); err != nil {
				t.Errorf("second PreStop = %v", err)
			}
			stopped := time.Now()
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(stopped); d != 0 {
				t.Errorf("the shutdown took %s after PreStop, want no delay and no phase again", d)
			}
			want := []string{"http.Bind", "phase", "http.Drain", "http.Stop"}
			if got := names(j); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	})

	t.Run("a stop during PreStop's delay waits only what is left of it, and the phases run once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			x := start(t, j, phaseSpec(j))
			x.WaitStage(host.StageServe)
			h := x.Host()
			returned := make(chan error)
			go func() { returned <- h.PreStop(context.Background()) }()
			time.Sleep(2 * time.Second)
			stopped := time.Now()
			x.Stop()
			x.WaitStage(host.StageDrain)
			if d := time.Since(stopped); d != 4*time.Second {
				t.Errorf("drain began %s after the stop, want the 3s left of the delay + the 1s phase", d)
			}
			<-returned
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
			if n := slices.Index(names(j), "phase"); n < 0 || slices.Contains(names(j)[n+1:], "phase") {
				t.Errorf("phase ran other than once: %v", j.get())
			}
		})
	})

	t.Run("before startup finished it only withdraws readiness", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			spec := phaseSpec(j)
			release := make(chan struct{})
			spec.Warmups = []host.Step{{Name: "slow", Start: func(context.Context) error { <-release; return nil }}}
			x := start(t, j, spec)
			x.WaitStage(host.StageWarmup)
			began := time.Now()
			if err := x.Host().PreStop(context.Background()); err != nil || time.Since(began) != 0 {
				t.Errorf("PreStop = %v after %s, want nil at once", err, time.Since(began))
			}
			if x.Host().Readiness() != health.StatusDraining {
				t.Errorf("readiness %s", x.Host().Readiness())
			}
			x.Stop() // before the warmup returns: startup never finishes
			close(release)
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(names(j), "phase") {
				t.Errorf("a phase ran though startup never finished: %v", j.get())
			}
		})
	})

	t.Run("ctx done during the delay: PreStop returns its error at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			x := start(t, j, phaseSpec(j))
			x.WaitStage(host.StageServe)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := x.Host().PreStop(ctx); err != context.DeadlineExceeded {
				t.Errorf("PreStop = %v, want the ctx's error", err)
			}
		})
	})
}

func TestStartupRegisteredDrainHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &journal{}
		lc := &hooks.Registry{}
		core, logs := observer.New(zap.InfoLevel)
		spec := host.AppSpec{
			Entrypoints: []host.Registration{{Entrypoint: newFake("http", j)}},
			Lifecycle:   lc,
			Telemetry:   host.TelemetryConfig{Logger: zap.New(core)},
			// The seed's pattern: a step registers its phase when it starts.
			Warmups: []host.Step{{Name: "consumer", Start: func(context.Context) error {
				lc.AddDrainHook(hooks.DrainHook{Name: "release", Run: func(context.Context, time.Duration) error {
					j.addReady("release")
					return nil
				}})
				return nil
			}}},
		}
		x := start(t, j, spec)
		x.WaitStage(host.StageServe)
		x.Stop()
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
		if got := names(j); !slices.Equal(got, []string{"http.Bind", "release", "http.Drain", "http.Stop"}) {
			t.Errorf("got %v, want the phase registered at startup run before the drain", got)
		}
		budget := logs.FilterMessage("shutdown budget").All()
		if len(budget) != 2 {
			t.Fatalf("%d shutdown budget lines, want the one at New and a recount at ready", len(budget))
		}
		if _, ok := budget[1].ContextMap()["drain_hooks"]; !ok {
			t.Errorf("the recount lacks drain_hooks: %v", budget[1].ContextMap())
		}
	})
}

func TestReadyLineRuntime(t *testing.T) {
	prev := debug.SetMemoryLimit(512 << 20)
	defer debug.SetMemoryLimit(prev)
	core, logs := observer.New(zap.InfoLevel)
	x := hosttest.Start(t, host.AppSpec{ServiceName: "x", Telemetry: host.TelemetryConfig{Logger: zap.New(core)}})
	x.WaitStage(host.StageServe)
	x.Stop()
	if err := x.Wait(); err != nil {
		t.Fatal(err)
	}
	ready := logs.FilterMessage("service ready").All()
	if len(ready) != 1 {
		t.Fatal("no ready line")
	}
	f := ready[0].ContextMap()
	if f["gomaxprocs"] != int64(runtime.GOMAXPROCS(0)) || f["gomemlimit"] != int64(512<<20) || f["go_version"] != runtime.Version() {
		t.Errorf("ready line %v, want gomaxprocs, gomemlimit and go_version", f)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if _, ok := fieldsOfNextReady(t)["gomemlimit"]; ok {
		t.Error("gomemlimit logged with no limit set")
	}
}

func fieldsOfNextReady(t *testing.T) map[string]any {
	core, logs := observer.New(zap.InfoLevel)
	x := hosttest.Start(t, host.AppSpec{ServiceName: "x", Telemetry: host.TelemetryConfig{Logger: zap.New(core)}})
	x.WaitStage(host.StageServe)
	x.Stop()
	if err := x.Wait(); err != nil {
		t.Fatal(err)
	}
	return logs.FilterMessage("service ready").All()[0].ContextMap()
}

func TestPreStopFromContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &journal{}
		var preStop host.PreStopFunc
		spec := phaseSpec(j)
		spec.Container = hostfx.Container(fx.Invoke(func(p host.PreStopFunc) { preStop = p }))
		x := start(t, j, spec)
		x.WaitStage(host.StageServe)
		if err := preStop(context.Background()); err != nil || x.Host().Readiness() != health.StatusDraining {
			t.Errorf("PreStopFunc = %v, readiness %s; want nil and draining", err, x.Host().Readiness())
		}
		if !slices.Contains(names(j), "phase") {
			t.Errorf("the phases did not run: %v", j.get())
		}
	})
}
