package host_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

// reportedResult returns the result field of the shutdown report.
func reportedResult(t *testing.T, logs *observer.ObservedLogs) string {
	t.Helper()
	lines := logs.FilterMessage("shutdown report").All()
	if len(lines) != 1 {
		t.Fatalf("%d shutdown reports", len(lines))
	}
	return lines[0].ContextMap()["result"].(string)
}

func TestTruthfulExit(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name       string
		spec       func(*hooks.Registry) host.AppSpec
		want       error
		wantResult host.Result
	}{
		{"a failing pre_shutdown hook makes the exit a failure", func(reg *hooks.Registry) host.AppSpec {
			reg.AddPreShutdown("outbox", func(context.Context) error { return boom })
			return host.AppSpec{Lifecycle: reg}
		}, host.ErrCleanupFailed, host.ResultFailure},
		{"a failing container close makes the exit a failure", func(*hooks.Registry) host.AppSpec {
			return host.AppSpec{Container: hostfx.Container(fx.Invoke(func(lc fx.Lifecycle) {
				lc.Append(fx.StopHook(func() error { return boom }))
			}))}
		}, host.ErrCleanupFailed, host.ResultFailure},
		{"a step that honours its ctx but overruns its timeout is a timeout", func(*hooks.Registry) host.AppSpec {
			return host.AppSpec{Warmups: []host.Step{{Name: "pool", Start: func(context.Context) error { return nil },
				Stop: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}}}
		}, host.ErrShutdownTimeout, host.ResultTimeout},
		{"a step that returns nil after its timeout is a timeout", func(*hooks.Registry) host.AppSpec {
			return host.AppSpec{Warmups: []host.Step{{Name: "pool", Start: func(context.Context) error { return nil },
				Stop: func(ctx context.Context) error { <-ctx.Done(); return nil }}}}
		}, host.ErrShutdownTimeout, host.ResultTimeout},
		{"a hook that honours its ctx but overruns its timeout is a timeout", func(reg *hooks.Registry) host.AppSpec {
			reg.AddPreShutdown("slow", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
			return host.AppSpec{Lifecycle: reg}
		}, host.ErrShutdownTimeout, host.ResultTimeout},
		{"a post_shutdown hook runs after the verdict: its overrun is reported beside it", func(reg *hooks.Registry) host.AppSpec {
			reg.AddPostShutdown("slow", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
			return host.AppSpec{Lifecycle: reg}
		}, nil, host.ResultSuccess},
		{"a clean exit is a success", func(*hooks.Registry) host.AppSpec { return host.AppSpec{} }, nil, host.ResultSuccess},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				core, logs := observer.New(zap.InfoLevel)
				spec := c.spec(&hooks.Registry{})
				spec.Entrypoints = []host.Registration{{Entrypoint: newFake("a", &journal{})}}
				spec.Telemetry.Logger = zap.New(core)
				x := start(t, &journal{}, spec)
				x.WaitStage(host.StageServe)
				x.Stop()
				err := x.Wait()
				if c.want == nil && err != nil || !errors.Is(err, c.want) {
					t.Errorf("Run = %v, want %v", err, c.want)
				}
				if (c.want == nil) != (host.ExitCode(err) == 0) {
					t.Errorf("exit code %d", host.ExitCode(err))
				}
				if r := x.Host().Shutdown().Result(); r != c.wantResult {
					t.Errorf("Result = %s, want %s", r, c.wantResult)
				}
				if r := reportedResult(t, logs); r != c.wantResult.String() {
					t.Errorf("report result = %s, Result = %s: one vocabulary", r, c.wantResult)
				}
			})
		})
	}
}

func TestHooksRunOnlyForStagesThatBegan(t *testing.T) {
	t.Run("no shutdown hook runs when startup failed before pre_start", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			reg.AddPreShutdown("flush-outbox", recordHook(j, "pre_shutdown"))
			reg.AddPostShutdown("bye", recordHook(j, "post_shutdown"))
			x := start(t, j, host.AppSpec{
				Lifecycle: reg,
				Warmups:   []host.Step{{Name: "db", Start: func(context.Context) error { return errors.New("unreachable") }}},
			})
			var se *host.StartupError
			if err := x.Wait(); !errors.As(err, &se) || se.Stage != host.StageWarmup {
				t.Fatalf("Run = %v", err)
			}
			if got := names(j); len(got) != 0 {
				t.Errorf("ran %v against a database warmup never reached", got)
			}
		})
	})

	t.Run("drain hooks run only after a complete startup, not after a post_start failure", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			reg.AddPostStart("announce", func(context.Context) error { return errors.New("no") })
			reg.AddDrainHook(hooks.DrainHook{Name: "handover", Run: func(context.Context, time.Duration) error {
				j.add("phase")
				return nil
			}})
			reg.AddPreShutdown("flush", recordHook(j, "pre_shutdown"))
			x := start(t, j, host.AppSpec{Lifecycle: reg, Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}}})
			_ = x.Wait()
			got := names(j)
			if slices.Contains(got, "phase") || !slices.Contains(got, "pre_shutdown") {
				t.Errorf("got %v: want pre_shutdown (pre_start began) and no drain hook", got)
			}
		})
	})
}

func TestRegistrationAfterNew(t *testing.T) {
	t.Run("a drain hook added to AppSpec.Lifecycle during startup runs and is counted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			core, logs := observer.New(zap.InfoLevel)
			x := start(t, j, host.AppSpec{
				Lifecycle:   reg,
				Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}},
				Warmups: []host.Step{{Name: "late", Start: func(context.Context) error {
					reg.AddDrainHook(hooks.DrainHook{Name: "handover", MaxDuration: 30 * time.Second,
						Run: func(ctx context.Context, _ time.Duration) error { j.add("phase"); <-ctx.Done(); return nil }})
					return nil
				}}},
				Budgets:   host.Budgets{DrainHooksBudget: 20 * time.Second},
				Telemetry: host.TelemetryConfig{Logger: zap.New(core)},
			})
			x.WaitStage(host.StageServe)
			// The line logged at New is the figure before the warmup registered its
			// phase; the one logged again at pre_start counts it.
			budget := logs.FilterMessage("shutdown budget").All()
			if len(budget) != 2 {
				t.Fatalf("%d shutdown budget lines, want it logged again", len(budget))
			}
			before, _ := budget[0].ContextMap()["worst_case"].(time.Duration)
			after, _ := budget[1].ContextMap()["worst_case"].(time.Duration)
			// The phases' 20s budget + 1s, less the 1s start_unwind that a service
			// with phases does not need (a stop during startup skips them).
			if d := after - before; d != 20*time.Second {
				t.Errorf("worst case grew by %s (%s → %s), want the 20s budget + 1s - start_unwind 1s", d, before, after)
			}
			if got := x.Host().WorstCase().Total; got != after {
				t.Errorf("WorstCase = %s, want the figure logged at pre_start, %s", got, after)
			}
			began := time.Now()
			x.Stop()
			_ = x.Wait()
			if !slices.Contains(names(j), "phase") {
				t.Error("the late phase did not run")
			}
			if took := time.Since(began); took > after || took < 20*time.Second {
				t.Errorf("exit took %s, want the phase's 20s, within %s", took, after)
			}
		})
	})

	t.Run("an invalid registration during startup fails startup with a ConfigError", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			reg := &hooks.Registry{}
			x := start(t, &journal{}, host.AppSpec{Lifecycle: reg,
				Warmups: []host.Step{{Name: "late", Start: func(context.Context) error {
					reg.AddPreShutdown("", nil)
					return nil
				}}}})
			err := x.Wait()
			var ce *fault.ConfigError
			if !errors.As(err, &ce) || host.ExitCode(err) != host.ExitConfig {
				t.Errorf("Run = %v, want a ConfigError", err)
			}
		})
	})

	t.Run("a hook added once startup reached pre_start is refused out loud, not run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			core, logs := observer.New(zap.InfoLevel)
			x := start(t, j, host.AppSpec{Lifecycle: reg, Telemetry: host.TelemetryConfig{Logger: zap.New(core)},
				Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}}})
			x.WaitStage(host.StageServe)
			reg.AddPreShutdown("too-late", recordHook(j, "too-late"))
			x.Stop()
			_ = x.Wait()
			if slices.Contains(names(j), "too-late") {
				t.Error("a hook registered while serving ran")
			}
			if logs.FilterMessageSnippet("refused, not run").Len() != 1 {
				t.Error("the refusal was not logged")
			}
		})
	})
}
