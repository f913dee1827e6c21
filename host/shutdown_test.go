package host_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
)

func TestStopDuringStartup(t *testing.T) {
	t.Run("a stop during warmup cancels it, skips Bind, never turns ready and is not a failure", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			warming := make(chan struct{})
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}},
				Warmups: []host.Step{{Name: "slow", Start: func(ctx context.Context) error {
					close(warming)
					select {
					case <-ctx.Done():
						j.add("warmup.cancelled")
						return ctx.Err()
					case <-time.After(45 * time.Second):
						return nil
					}
				}}},
				Budgets: host.Budgets{DrainDelay: 5 * time.Second},
			})
			<-warming
			began := time.Now()
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatalf("Run = %v, want nil: a stop is not a failure", err)
			}
			if d := time.Since(began); d != 0 {
				t.Errorf("exit took %s; want no drain delay for a service never ready", d)
			}
			if got := names(j); !slices.Equal(got, []string{"warmup.cancelled"}) {
				t.Errorf("got %v, want only the cancelled warmup (no Bind)", got)
			}
			for _, e := range x.Events() {
				if e.Readiness.String() == "ready" {
					t.Errorf("readiness was ready at %s", e.Stage)
				}
			}
		})
	})

	t.Run("a stop between stages is honoured at the next boundary", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			reg.AddPreStart("stopper", func(context.Context) error { j.h.Shutdown().Begin(); return nil })
			h := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}}, Lifecycle: reg})
			if err := h.Wait(); err != nil {
				t.Fatal(err)
			}
			if got := names(j); len(got) != 0 {
				t.Errorf("got %v, want nothing bound", got)
			}
		})
	})
}

func TestShutdownHandle(t *testing.T) {
	t.Run("repeated Begin calls share one shutdown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			drains := 0
			a := newFake("a", j)
			a.drain = func(context.Context) error { drains++; return nil }
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: a}},
				Budgets: host.Budgets{DrainDelay: time.Second, Deadline: 10 * time.Second}})
			x.WaitStage(host.StageServe)
			sd := x.Host().Shutdown()
			if host.ShutdownProgress(sd) != "not_started" {
				t.Fatalf("phase = %s before Begin", host.ShutdownProgress(sd))
			}
			began := time.Now()
			sd.Begin()
			time.Sleep(500 * time.Millisecond)
			sd.Begin()
			sd.BeginCooperative() // does not change the mode: no wait for MarkApplicationDrained
			<-sd.Done()
			if d := time.Since(began); d != time.Second {
				t.Errorf("exit took %s, want the 1s delay once", d)
			}
			if drains != 1 || sd.Result() != host.ResultSuccess || host.ShutdownProgress(sd) != "completed" {
				t.Errorf("drains=%d result=%s phase=%s", drains, sd.Result(), host.ShutdownProgress(sd))
			}
			if err := x.Wait(); err != nil {
				t.Error(err)
			}
		})
	})

	t.Run("the Deadline cuts the waits, forces cleanup and the result stays Timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			a := newFake("a", j)
			a.drain = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
			reg := &hooks.Registry{}
			reg.AddPostShutdown("after", recordHook(j, "post_shutdown"))
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: a}},
				Lifecycle:   reg,
				Budgets:     host.Budgets{DrainDelay: 2 * time.Second, DrainGrace: 30 * time.Second, Deadline: 3 * time.Second},
			})
			x.WaitStage(host.StageServe)
			began := time.Now()
			x.Stop()
			sd := x.Host().Shutdown()
			<-sd.CleanupStarted()
			if d := time.Since(began); d != 3*time.Second {
				t.Errorf("cleanup began after %s, want at the 3s deadline", d)
			}
			err := x.Wait()
			if !errors.Is(err, host.ErrShutdownTimeout) || host.ExitCode(err) != 1 {
				t.Errorf("Run = %v, want ErrShutdownTimeout", err)
			}
			if sd.Result() != host.ResultTimeout {
				t.Errorf("Result = %s, want timeout", sd.Result())
			}
			if got := names(j); !slices.Contains(got, "post_shutdown") {
				t.Errorf("cleanup did not finish: %v", got)
			}
		})
	})

	t.Run("cooperative shutdown waits for MarkApplicationDrained before cleanup", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			reg.AddPreShutdown("flush", recordHook(j, "pre_shutdown"))
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}}, Lifecycle: reg,
				Budgets: host.Budgets{DrainGrace: 2 * time.Hour}})
			x.WaitStage(host.StageServe)
			sd := x.Host().Shutdown()
			sd.BeginCooperative()
			time.Sleep(time.Hour)
			synctest.Wait()
			if host.ShutdownProgress(sd) != "started" || slices.Contains(names(j), "pre_shutdown") {
				t.Fatalf("phase = %s; cleanup must wait for the application", host.ShutdownProgress(sd))
			}
			sd.MarkApplicationDrained()
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(names(j), "pre_shutdown") {
				t.Error("pre_shutdown did not run")
			}
		})
	})

	t.Run("a cooperative wait without MarkApplicationDrained or Deadline ends with the drain window, as a timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			reg.AddPreShutdown("flush", recordHook(j, "pre_shutdown"))
			slow := newFake("slow", j)
			slow.drain = func(context.Context) error { time.Sleep(3 * time.Second); return nil }
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: slow}}, Lifecycle: reg,
				Budgets: host.Budgets{DrainGrace: 10 * time.Second}})
			x.WaitStage(host.StageServe)
			sd := x.Host().Shutdown()
			began := time.Now()
			sd.BeginCooperative()
			<-sd.CleanupStarted()
			if d := time.Since(began); d != 10*time.Second {
				t.Errorf("cleanup began %s after the stop, want at the end of the 10s drain window", d)
			}
			err := x.Wait()
			if !errors.Is(err, host.ErrShutdownTimeout) || sd.Result() != host.ResultTimeout {
				t.Errorf("Run = %v, Result = %s; want a timeout", err, sd.Result())
			}
			if !slices.Contains(names(j), "pre_shutdown") {
				t.Error("cleanup did not run")
			}
		})
	})

	t.Run("ForceCleanup cuts the drain delay without making the result Timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}},
				Budgets: host.Budgets{DrainDelay: time.Minute}})
			x.WaitStage(host.StageServe)
			sd := x.Host().Shutdown()
			sd.Begin()
			time.Sleep(time.Second)
			sd.ForceCleanup()
			began := time.Now()
			<-sd.Done()
			if d := time.Since(began); d != 0 {
				t.Errorf("exit took %s after ForceCleanup", d)
			}
			if sd.Result() != host.ResultSuccess {
				t.Errorf("Result = %s, want success", sd.Result())
			}
			if got := names(j); !slices.Equal(got, []string{"a.Bind", "a.Drain", "a.Stop"}) {
				t.Errorf("got %v: entrypoints must still be drained and stopped", got)
			}
			_ = x.Wait()
		})
	})

	t.Run("BeginDraining withdraws readiness and keeps serving", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}}})
			x.WaitStage(host.StageServe)
			x.Host().BeginDraining()
			time.Sleep(time.Minute)
			synctest.Wait()
			if r := x.Host().Readiness().String(); r != "draining" || x.Host().Stage() != host.StageServe {
				t.Errorf("readiness %s, stage %s", r, x.Host().Stage())
			}
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("drain hooks run once, after readiness is withdrawn, within their budget", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			runs := 0
			var allowedSeen time.Duration
			reg.AddDrainHook(hooks.DrainHook{Name: "spread", MaxDuration: time.Minute, Run: func(ctx context.Context, allowed time.Duration) error {
				runs++
				allowedSeen = allowed
				<-ctx.Done()
				return nil
			}})
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}}, Lifecycle: reg,
				Budgets: host.Budgets{DrainHooksBudget: 3 * time.Second}})
			x.WaitStage(host.StageServe)
			x.Stop()
			_ = x.Wait()
			if runs != 1 || allowedSeen != 3*time.Second {
				t.Errorf("runs=%d allowed=%s, want 1 run given the 3s budget", runs, allowedSeen)
			}
		})
	})
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &journal{}
		x := start(t, j, host.AppSpec{})
		x.Stop()
		_ = x.Wait()
		if err := x.Host().Run(context.Background()); !errors.Is(err, host.ErrAlreadyRun) {
			t.Errorf("second Run = %v", err)
		}
	})
}

func TestOneStopSignal(t *testing.T) {
	t.Run("Begin withdraws readiness before it returns", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			x := start(t, &journal{}, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: newFake("a", &journal{})}},
				Budgets: host.Budgets{DrainDelay: time.Minute}})
			x.WaitStage(host.StageServe)
			if r := x.Host().Readiness().String(); r != "ready" {
				t.Fatalf("readiness %s while serving", r)
			}
			x.Host().Shutdown().Begin()
			if r := x.Host().Readiness().String(); r != "draining" {
				t.Errorf("readiness %s right after Begin, want draining with no goroutine hop", r)
			}
			if lc := x.Host().Snapshot(); !lc.Draining || lc.Ready {
				t.Errorf("/debug/lifecycle = %+v", lc)
			}
			_ = x.Wait()
		})
	})

	t.Run("cancelling the caller's ctx is the same stop, and leaves no goroutine behind", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			h, err := host.New(host.AppSpec{ServiceName: "x", Telemetry: quiet(), Probes: probesOff(),
				Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}}}, env())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- h.Run(ctx) }()
			time.Sleep(time.Second)
			synctest.Wait()
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if p := host.ShutdownProgress(h.Shutdown()); p != "completed" {
				t.Errorf("phase %s", p)
			}
			if got := names(j); !slices.Equal(got, []string{"a.Bind", "a.Drain", "a.Stop"}) {
				t.Errorf("got %v", got)
			}
		})
	})
}
