package host_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

// hangingFlush is a span processor whose Shutdown (the telemetry flush) does not
// return before release is closed.
type hangingFlush struct{ release chan struct{} }

func (hangingFlush) OnStart(context.Context, trace.ReadWriteSpan) {}
func (hangingFlush) OnEnd(trace.ReadOnlySpan)                     {}
func (f hangingFlush) Shutdown(context.Context) error             { <-f.release; return nil }
func (hangingFlush) ForceFlush(context.Context) error             { return nil }

// hangs says which steps of the exit do not return, whatever their ctx says, until
// the test ends.
type hangs struct {
	serve, drain, stop, phase, preShutdown, postShutdown, warmupStop, scope, flush, cooperative bool
	// capped: three drain hooks with a MaxDuration of 200ms each instead of one
	// without; each hangs when phase does.
	capped bool
}

func (h hangs) spec(j *journal, n int, b host.Budgets, release chan struct{}) host.AppSpec {
	hang := func(context.Context) error { <-release; return nil }
	reg := &hooks.Registry{}
	spec := host.AppSpec{Budgets: b, Lifecycle: reg}
	for i := range n {
		f := newFake(fmt.Sprintf("e%d", i), j)
		if h.serve {
			f.serve = func(context.Context, <-chan struct{}) error { <-release; return nil }
		}
		if h.drain {
			f.drain = hang
		}
		if h.stop {
			f.stopF = hang
		}
		spec.Entrypoints = append(spec.Entrypoints, host.Registration{Entrypoint: f, Order: i})
	}
	ok := func(context.Context) error { return nil }
	pick := func(hung bool) func(context.Context) error {
		if hung {
			return hang
		}
		return ok
	}
	phase := func(ctx context.Context, _ time.Duration) error {
		if h.phase {
			<-release
		}
		return nil
	}
	if h.capped {
		for i := range 3 {
			reg.AddDrainHook(hooks.DrainHook{Name: fmt.Sprint("capped", i), Order: i, MaxDuration: 200 * time.Millisecond, Run: phase})
		}
	} else {
		reg.AddDrainHook(hooks.DrainHook{Name: "phase", Run: phase})
	}
	reg.AddPreShutdown("pre", pick(h.preShutdown))
	reg.AddPostShutdown("post", pick(h.postShutdown))
	spec.Warmups = []host.Step{{Name: "pool", Start: ok, Stop: pick(h.warmupStop)}}
	spec.Container = hostfx.Container(fx.Invoke(func(lc fx.Lifecycle) { lc.Append(fx.Hook{OnStop: pick(h.scope)}) }))
	if h.flush {
		spec.Telemetry.SpanProcessors = []trace.SpanProcessor{hangingFlush{release}}
	}
	return spec
}

func TestEveryExitIsBounded(t *testing.T) {
	t.Run("with every step hung, the exit fits the logged worst case", func(t *testing.T) {
		all := hangs{true, true, true, true, true, true, true, true, true, true, false}
		for _, n := range []int{1, 3} {
			synctest.Test(t, func(t *testing.T) {
				measureExit(t, all, n, host.Budgets{DrainDelay: 3 * time.Second, DrainHooksBudget: 2 * time.Second,
					DrainGrace: 4 * time.Second, StepTimeout: time.Second})
			})
		}
	})

	// Each capped phase that ignores its cancellation costs its MaxDuration and the
	// second it is given before abandonment: 3 x 1.2s, not 3 x 0.2s + 1s.
	t.Run("with capped phases hung, the exit fits the logged worst case", func(t *testing.T) {
		for _, h := range []hangs{{phase: true, capped: true}, {true, true, true, true, true, true, true, true, true, true, true}} {
			synctest.Test(t, func(t *testing.T) {
				measureExit(t, h, 1, host.Budgets{DrainHooksBudget: 10 * time.Second, DrainGrace: time.Second,
					StepTimeout: 100 * time.Millisecond})
			})
		}
	})

	t.Run("property: whatever hangs and whatever the budgets, the exit fits the logged worst case", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		d := func() time.Duration { return time.Duration(rng.IntN(5000)) * time.Millisecond }
		for i := range 40 {
			var h hangs
			for _, p := range []*bool{&h.serve, &h.drain, &h.stop, &h.phase, &h.preShutdown, &h.postShutdown,
				&h.warmupStop, &h.scope, &h.flush, &h.cooperative, &h.capped} {
				*p = rng.IntN(2) == 0
			}
			b := host.Budgets{DrainDelay: d(), DrainHooksBudget: d() + time.Millisecond, DrainGrace: d() + time.Millisecond,
				StepTimeout: d() + time.Millisecond}
			if rng.IntN(3) == 0 {
				b.Deadline = d() + time.Millisecond
			}
			n := 1 + rng.IntN(4)
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { measureExit(t, h, n, b) })
			})
		}
	})
}

// measureExit runs a service whose steps hang as h says, stops it once serving, and
// checks that the exit took no longer than the worst case the Host logged.
func measureExit(t *testing.T, h hangs, n int, b host.Budgets) {
	t.Helper()
	j := &journal{}
	release := make(chan struct{})
	defer func() {
		close(release)
		synctest.Wait() // the abandoned steps end, and log, before the test does
	}()
	x := start(t, j, h.spec(j, n, b, release))
	if !x.WaitStage(host.StageServe) {
		t.Fatalf("did not reach serve: %v", x.Wait())
	}
	logged := x.Host().WorstCase()
	began := time.Now()
	if h.cooperative {
		x.Host().Shutdown().BeginCooperative()
	} else {
		x.Stop()
	}
	err := x.Wait()
	took := time.Since(began)
	if took > logged.Total {
		t.Errorf("exit took %s, more than the logged worst case %s (hangs %+v, budgets %+v)", took, logged, h, b)
	}
	t.Logf("exit took %s of the logged %s", took, logged.Total)
	// A hung flush is a warning, not a timeout: the exit code is the work's. A hung
	// post_shutdown hook runs after the verdict and is reported beside it.
	rest := h
	rest.flush, rest.postShutdown, rest.capped = false, false, false
	hung := rest != hangs{}
	if hung && err == nil {
		t.Errorf("Run = nil with hung steps %+v; want a timeout", h)
	}
	if hung && !errors.Is(err, host.ErrShutdownTimeout) {
		t.Errorf("Run = %v, want ErrShutdownTimeout", err)
	}
	if r := x.Host().Shutdown().Result(); hung && r != host.ResultTimeout {
		t.Errorf("Result = %s, want timeout", r)
	}
	if !hung && err != nil {
		t.Errorf("Run = %v with only the flush or a post_shutdown hook hung; want nil", err)
	}
}
