package host_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// TestResultFinalBeforePostShutdown: a post_shutdown hook reads, through
// Shutdown.Result, the word the report will carry, whatever ended the run; a
// pre_shutdown hook already reads the verdict so far.
func TestResultFinalBeforePostShutdown(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name string
		spec func(*hooks.Registry, *host.AppSpec)
		// stop: the test stops the service once serving (false: it ends by itself)
		stop       bool
		want       host.Result
		wantBefore host.Result // what a pre_shutdown hook reads
	}{
		{"a clean exit", func(*hooks.Registry, *host.AppSpec) {}, true, host.ResultSuccess, host.ResultSuccess},
		{"a failed startup (post_start hook)", func(reg *hooks.Registry, _ *host.AppSpec) {
			reg.AddPostStart("announce", func(context.Context) error { return boom })
		}, false, host.ResultFailure, host.ResultFailure},
		{"a failed pre_shutdown hook", func(reg *hooks.Registry, _ *host.AppSpec) {
			reg.AddPreShutdown("outbox", func(context.Context) error { return boom })
		}, true, host.ResultFailure, host.ResultSuccess},
		{"a failed post_shutdown hook does not change the settled verdict", func(reg *hooks.Registry, _ *host.AppSpec) {
			reg.AddPostShutdown("early", func(context.Context) error { return boom })
		}, true, host.ResultSuccess, host.ResultSuccess},
		{"an expired Deadline", func(_ *hooks.Registry, s *host.AppSpec) {
			s.Budgets.Deadline = time.Second
			s.Budgets.DrainDelay = 5 * time.Second
		}, true, host.ResultTimeout, host.ResultTimeout},
		{"an interrupted task", func(_ *hooks.Registry, s *host.AppSpec) {
			task, err := entrypoint.NewTask(entrypoint.TaskConfig{Name: "backfill"}, func(ctx context.Context) error {
				<-ctx.Done()
				return context.Cause(ctx)
			})
			if err != nil {
				t.Fatal(err)
			}
			s.Entrypoints = append(s.Entrypoints, host.Registration{Entrypoint: task})
		}, true, host.ResultInterrupted, host.ResultInterrupted},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				core, logs := observer.New(zap.InfoLevel)
				reg := &hooks.Registry{}
				var sd *host.Shutdown
				var before, during host.Result = -1, -1
				reg.AddPreShutdown("read", func(context.Context) error { before = sd.Result(); return nil })
				spec := host.AppSpec{
					Entrypoints: []host.Registration{{Entrypoint: newFake("a", &journal{})}},
					Lifecycle:   reg,
					Telemetry:   host.TelemetryConfig{Logger: zap.New(core)},
				}
				c.spec(reg, &spec)
				reg.AddPostShutdown("read", func(context.Context) error { during = sd.Result(); return nil })
				spec.ServiceName = "test"
				x := hosttest.New(t, spec)
				sd = x.Host().Shutdown()
				x.Start()
				if c.stop {
					x.WaitStage(host.StageServe)
					x.Stop()
				}
				err := x.Wait()
				report := reportedResult(t, logs)
				if during != c.want || report != c.want.String() || sd.Result() != c.want {
					t.Errorf("Result in post_shutdown = %s, report = %s, Result after = %s; want %s at every point",
						during, report, sd.Result(), c.want)
				}
				if before != c.wantBefore {
					t.Errorf("Result in pre_shutdown = %s, want the verdict so far, %s", before, c.wantBefore)
				}
				if (c.want == host.ResultSuccess) != (err == nil) {
					t.Errorf("Run = %v with result %s", err, c.want)
				}
			})
		})
	}
}
