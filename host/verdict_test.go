package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
)

// The verdict of an exit says what happened to the work: ForceCleanup is never a
// timeout, a Drain that failed is a failure, and Result has its exit code.
func TestVerdict(t *testing.T) {
	t.Run("ForceCleanup during a cooperative wait is not a timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}},
				Budgets: host.Budgets{DrainGrace: time.Minute}})
			x.WaitStage(host.StageServe)
			sd := x.Host().Shutdown()
			sd.BeginCooperative()
			time.Sleep(time.Second)
			synctest.Wait()
			if host.ShutdownProgress(sd) != "started" {
				t.Fatalf("phase = %s, want started: the cooperative wait", host.ShutdownProgress(sd))
			}
			sd.ForceCleanup()
			err := x.Wait()
			if err != nil || sd.Result() != host.ResultSuccess || host.ExitCode(err) != 0 {
				t.Errorf("Run = %v, Result = %s; want nil and success: ForceCleanup never makes a timeout", err, sd.Result())
			}
		})
	})

	t.Run("a Drain that fails within its window makes the result failure, exit 1", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			consumer := newFake("orders", j)
			commit := errors.New("final commit: write tcp: use of closed network connection")
			consumer.drain = func(context.Context) error { return commit }
			core, logs := observer.New(zap.InfoLevel)
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: consumer}},
				Telemetry: host.TelemetryConfig{Logger: zap.New(core)}})
			x.WaitStage(host.StageServe)
			x.Stop()
			err := x.Wait()
			sd := x.Host().Shutdown()
			if !errors.Is(err, host.ErrCleanupFailed) || !strings.Contains(err.Error(), "use of closed network connection") ||
				sd.Result() != host.ResultFailure || host.ExitCode(err) != host.ExitFailure {
				t.Errorf("Run = %v, Result = %s; want a failure naming the drain's error", err, sd.Result())
			}
			rep := logs.FilterMessage("shutdown report").All()
			if len(rep) != 1 || rep[0].ContextMap()["result"] != "failure" || rep[0].ContextMap()["exit_code"] != int64(1) {
				t.Errorf("report = %v, want result failure, exit_code 1", rep)
			}
		})
	})

	t.Run("a Drain whose own error comes at the end of its window is a failure too", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			consumer := newFake("orders", j)
			consumer.drain = func(ctx context.Context) error {
				<-ctx.Done() // the broker is frozen: the commit waits out the window
				// Its own abandonment of the commit, not the Host's of the Drain.
				return fmt.Errorf("final commit: kafka offset commit: %w", fault.ErrAbandoned)
			}
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: consumer}},
				Budgets: host.Budgets{DrainGrace: 6 * time.Second}})
			x.WaitStage(host.StageServe)
			x.Stop()
			err := x.Wait()
			if r := x.Host().Shutdown().Result(); r != host.ResultFailure || host.ExitCode(err) != host.ExitFailure {
				t.Errorf("Run = %v, Result = %s; want failure: the commit's failure is the drain's own", err, r)
			}
		})
	})

	t.Run("a Drain cut short by ForceCleanup is not a failure", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			slow := newFake("slow", j)
			slow.drain = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: slow}},
				Budgets: host.Budgets{DrainGrace: time.Minute}})
			x.WaitStage(host.StageServe)
			x.Stop()
			time.Sleep(time.Second)
			x.Host().Shutdown().ForceCleanup()
			if err := x.Wait(); err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		})
	})

	t.Run("Result.ExitCode agrees with ExitCode of Run's error", func(t *testing.T) {
		for r, want := range map[host.Result]int{host.ResultSuccess: 0, host.ResultTimeout: 1, host.ResultFailure: 1,
			host.ResultInterrupted: host.ExitInterrupted} {
			if got := r.ExitCode(); got != want {
				t.Errorf("%s.ExitCode() = %d, want %d", r, got, want)
			}
		}
	})

	t.Run("Completed refuses at once before Begin, returns the result after", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}}})
			x.WaitStage(host.StageServe)
			sd := x.Host().Shutdown()
			if _, err := sd.Completed(context.Background()); !errors.Is(err, host.ErrNotBegun) {
				t.Errorf("Completed before Begin = %v, want ErrNotBegun at once", err)
			}
			sd.Begin()
			if r, err := sd.Completed(context.Background()); err != nil || r != host.ResultSuccess {
				t.Errorf("Completed = %s, %v; want success", r, err)
			}
			_ = x.Wait()
		})
	})
}
