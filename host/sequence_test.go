package host_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/host/hosttest"
)

// start builds spec with the journal reading the Host's readiness, and runs it.
func start(t *testing.T, j *journal, spec host.AppSpec, opts ...host.Option) *hosttest.Harness {
	t.Helper()
	if spec.ServiceName == "" {
		spec.ServiceName = "test"
	}
	x := hosttest.New(t, spec, opts...)
	j.setHost(x.Host())
	x.Start()
	return x
}

func recordHook(j *journal, line string) hooks.Func {
	return func(context.Context) error { j.addReady(line); return nil }
}

func TestSequence(t *testing.T) {
	t.Run("runs every step in the normative order", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			reg.AddPreStart("pre-start", recordHook(j, "pre_start"))
			reg.AddPostStart("post-start", recordHook(j, "post_start"))
			reg.AddPreShutdown("pre-shutdown", recordHook(j, "pre_shutdown"))
			reg.AddPostShutdown("post-shutdown", recordHook(j, "post_shutdown"))
			reg.AddDrainHook(hooks.DrainHook{Name: "handover", Run: func(context.Context, time.Duration) error {
				j.addReady("phase")
				return nil
			}})
			spec := host.AppSpec{
				Entrypoints: []host.Registration{
					{Entrypoint: newFake("b", j), Order: 2},
					{Entrypoint: newFake("a", j), Order: 1},
				},
				Warmups: []host.Step{{
					Name:  "cache",
					Start: func(context.Context) error { j.addReady("warmup.start"); return nil },
					Stop:  func(context.Context) error { j.addReady("warmup.stop"); return nil },
				}},
				Lifecycle: reg,
				Container: hostfx.Container(fx.Invoke(func(lc fx.Lifecycle) {
					lc.Append(fx.StartStopHook(
						func() { j.addReady("scope.open") },
						func() { j.addReady("scope.close") }))
				})),
			}
			x := start(t, j, spec)
			x.WaitStage(host.StageServe)
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			want := []string{
				"scope.open [unavailable]",
				"warmup.start [unavailable]",
				"pre_start [unavailable]",
				"a.Bind [unavailable]",
				"b.Bind [unavailable]",
				"post_start [ready]",
				"phase [draining]",
				"a.Drain [draining]",
				"b.Drain [draining]",
				"b.Stop [draining]",
				"a.Stop [draining]",
				"pre_shutdown [draining]",
				"warmup.stop [draining]",
				"scope.close [draining]",
				"post_shutdown [draining]",
			}
			if got := drainsSorted(j.get()); !slices.Equal(got, want) {
				t.Errorf("sequence:\n got %q\nwant %q", got, want)
			}
			wantStages := []host.Stage{host.StageBootstrap, host.StageOpenScope, host.StageWarmup,
				host.StagePreStart, host.StageBind, host.StagePostStart, host.StageServe, host.StageDrainDelay,
				host.StageDrainHooks, host.StageDrain, host.StageStop, host.StagePreShutdown,
				host.StageWarmupStop, host.StageCloseScope, host.StageFlush, host.StagePostShutdown, host.StageStopped}
			if got := x.Stages(); !slices.Equal(got, wantStages) {
				t.Errorf("stages:\n got %v\nwant %v", got, wantStages)
			}
			if p := host.ShutdownProgress(x.Host().Shutdown()); p != "completed" {
				t.Errorf("shutdown phase = %s, want completed", p)
			}
		})
	})

	t.Run("readiness turns false before the drain delay, which passes with everything accepting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			var stoppedAt, drainedAt time.Time
			a := newFake("a", j)
			a.drain = func(context.Context) error { drainedAt = time.Now(); return nil }
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: a}},
				Budgets:     host.Budgets{DrainDelay: 5 * time.Second},
			})
			x.WaitStage(host.StageServe)
			stoppedAt = time.Now()
			x.Stop()
			x.WaitStage(host.StageDrainDelay)
			if ev := x.Events(); ev[len(ev)-1].Readiness.String() != "draining" {
				t.Errorf("readiness at announce = %s, want draining", ev[len(ev)-1].Readiness)
			}
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
			if d := drainedAt.Sub(stoppedAt); d != 5*time.Second {
				t.Errorf("Drain came %s after the stop, want exactly the 5s drain delay", d)
			}
		})
	})

	t.Run("the drain delay is skipped when the service never became ready", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			reg.AddPostStart("fails", func(context.Context) error { return errors.New("no") })
			a := newFake("a", j)
			var drained time.Time
			a.drain = func(context.Context) error { drained = time.Now(); return nil }
			began := time.Now()
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: a}},
				Lifecycle:   reg,
				Budgets:     host.Budgets{DrainDelay: 5 * time.Second},
			})
			_ = x.Wait()
			// post_start ran after readiness flipped, so this service WAS ready.
			if drained.Sub(began) != 5*time.Second {
				t.Errorf("after a post_start failure the delay should apply (was ready): %s", drained.Sub(began))
			}

			j2 := &journal{}
			b := newFake("b", j2)
			b.bind = func(context.Context) error { return errors.New("port taken") }
			began = time.Now()
			y := start(t, j2, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: b}},
				Budgets:     host.Budgets{DrainDelay: 5 * time.Second},
			})
			_ = y.Wait()
			if d := time.Since(began); d != 0 {
				t.Errorf("never ready, yet the exit took %s", d)
			}
		})
	})

	t.Run("every entrypoint drains at once, then each stops in reverse bind order", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			var regs []host.Registration
			for i, n := range []string{"c", "a", "b"} {
				regs = append(regs, host.Registration{Entrypoint: newFake(n, j), Order: []int{3, 1, 2}[i]})
			}
			x := start(t, j, host.AppSpec{Entrypoints: regs})
			x.WaitStage(host.StageServe)
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range j.get() {
				got = append(got, strings.Fields(l)[0])
			}
			want := []string{"a.Bind", "b.Bind", "c.Bind", "a.Drain", "b.Drain", "c.Drain", "c.Stop", "b.Stop", "a.Stop"}
			if got = drainsSorted(got); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	})
}
