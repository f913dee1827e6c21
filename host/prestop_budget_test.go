package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
)

// slowPhaseSpec is a service whose one drain hook runs until its ctx ends, within a
// budget far above the Deadline.
func slowPhaseSpec(j *journal, b host.Budgets) (host.AppSpec, *observer.ObservedLogs) {
	lc := &hooks.Registry{}
	lc.AddDrainHook(hooks.DrainHook{Name: "hand-over", Run: func(ctx context.Context, _ time.Duration) error {
		j.addReady("phase")
		<-ctx.Done()
		return ctx.Err()
	}})
	core, logs := observer.New(zap.InfoLevel)
	b.DrainHooksBudget = 30 * time.Second
	return host.AppSpec{
		Entrypoints: []host.Registration{{Entrypoint: newFake("http", j)}},
		Lifecycle:   lc,
		Budgets:     b,
		Telemetry:   host.TelemetryConfig{Logger: zap.New(core)},
	}, logs
}

// cutShort is the cut_short field of the shutdown report.
func cutShort(t *testing.T, logs *observer.ObservedLogs) string {
	t.Helper()
	rep := logs.FilterMessage("shutdown report").All()
	if len(rep) != 1 {
		t.Fatalf("%d shutdown reports", len(rep))
	}
	s, _ := rep[0].ContextMap()["cut_short"].(string)
	return s
}

func TestPreStopHonoursTheBudgets(t *testing.T) {
	t.Run("the Deadline cuts the drain hooks PreStop is running and names itself in the report", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			spec, logs := slowPhaseSpec(j, host.Budgets{DrainDelay: time.Second, Deadline: 2 * time.Second})
			x := start(t, j, spec)
			x.WaitStage(host.StageServe)
			returned := make(chan error, 1)
			go func() { returned <- x.Host().PreStop(context.Background()) }()
			time.Sleep(time.Second) // the delay has passed: the phase runs
			synctest.Wait()
			stopped := time.Now()
			x.Stop()
			x.WaitStage(host.StageDrain)
			if d := time.Since(stopped); d != 2*time.Second {
				t.Errorf("drain began %s after the stop, want the 2s Deadline", d)
			}
			err := x.Wait()
			<-returned
			if !errors.Is(err, host.ErrShutdownTimeout) || !strings.Contains(err.Error(), "deadline expired in stage drain_hooks") {
				t.Errorf("Run = %v, want a timeout naming the Deadline and the stage it expired in", err)
			}
			if cut := cutShort(t, logs); !strings.Contains(cut, "deadline expired") || !strings.Contains(cut, "drain_hooks") {
				t.Errorf("report's cut_short = %q, want the Deadline and the stage it expired in", cut)
			}
		})
	})

	t.Run("ForceCleanup cuts the drain hooks PreStop is running", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			spec, logs := slowPhaseSpec(j, host.Budgets{DrainDelay: time.Second})
			x := start(t, j, spec)
			x.WaitStage(host.StageServe)
			returned := make(chan error, 1)
			go func() { returned <- x.Host().PreStop(context.Background()) }()
			time.Sleep(time.Second)
			synctest.Wait()
			x.Stop()
			time.Sleep(time.Second)
			forced := time.Now()
			x.Host().Shutdown().ForceCleanup()
			x.WaitStage(host.StageDrain)
			if d := time.Since(forced); d != 0 {
				t.Errorf("drain began %s after ForceCleanup, want at once", d)
			}
			if err := x.Wait(); err != nil {
				t.Errorf("Run = %v, want nil: ForceCleanup is not a timeout", err)
			}
			<-returned
			if cut := cutShort(t, logs); !strings.Contains(cut, "ForceCleanup") {
				t.Errorf("report's cut_short = %q, want ForceCleanup", cut)
			}
		})
	})

	t.Run("ForceCleanup during PreStop's delay ends PreStop at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			spec, _ := slowPhaseSpec(j, host.Budgets{DrainDelay: 10 * time.Second})
			x := start(t, j, spec)
			x.WaitStage(host.StageServe)
			returned := make(chan error, 1)
			go func() { returned <- x.Host().PreStop(context.Background()) }()
			time.Sleep(time.Second)
			forced := time.Now()
			x.Host().Shutdown().ForceCleanup()
			if err := <-returned; err == nil || time.Since(forced) != 0 {
				t.Errorf("PreStop = %v %s after ForceCleanup, want the cause at once", err, time.Since(forced))
			}
			if err := x.Wait(); err != nil {
				t.Error(err)
			}
			if time.Since(forced) != 0 {
				t.Errorf("the exit took %s after ForceCleanup, want nothing left to wait", time.Since(forced))
			}
		})
	})
}

// TestPreStopPathFitsTheWorstCase: with every step hung, an exit that PreStop began
// (the preStop hook, then SIGTERM once it returns) ends within the logged worst case,
// counted from the PreStop call as the orchestrator's grace period is.
func TestPreStopPathFitsTheWorstCase(t *testing.T) {
	all := hangs{true, true, true, true, true, true, true, true, true, false, false}
	for _, c := range []struct {
		name string
		n    int
		b    host.Budgets
	}{
		// The example's budgets under its manifest.
		{"example", 6, host.Budgets{DrainDelay: 5 * time.Second, DrainHooksBudget: 500 * time.Millisecond,
			DrainGrace: 6 * time.Second, StepTimeout: 1500 * time.Millisecond}},
		{"delay below StepTimeout", 1, host.Budgets{DrainDelay: time.Second, DrainHooksBudget: 2 * time.Second,
			DrainGrace: 4 * time.Second, StepTimeout: 3 * time.Second}},
		{"no delay", 2, host.Budgets{DrainHooksBudget: time.Second, DrainGrace: 2 * time.Second, StepTimeout: time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				j := &journal{}
				release := make(chan struct{})
				defer func() {
					close(release)
					synctest.Wait()
				}()
				x := start(t, j, all.spec(j, c.n, c.b, release))
				if !x.WaitStage(host.StageServe) {
					t.Fatalf("did not reach serve: %v", x.Wait())
				}
				logged := x.Host().WorstCase()
				began := time.Now()
				if err := x.Host().PreStop(context.Background()); err != nil {
					t.Fatal(err)
				}
				x.Stop() // Kubernetes sends SIGTERM once the preStop hook returns
				_ = x.Wait()
				took := time.Since(began)
				t.Logf("PreStop path took %s of the logged %s", took, logged.Total)
				if took > logged.Total {
					t.Errorf("the PreStop path took %s, more than the logged worst case %s", took, logged)
				}
			})
		})
	}
}
