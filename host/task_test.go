package host_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// taskSpec is a service with one task running work and the fakes given, logging to an
// observer so the test can read the shutdown report.
func taskSpec(t *testing.T, cfg entrypoint.TaskConfig, work func(context.Context) error, others ...*fake) (host.AppSpec, *observer.ObservedLogs) {
	t.Helper()
	task, err := entrypoint.NewTask(cfg, work)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.DebugLevel)
	spec := host.AppSpec{
		ServiceName: "job",
		Entrypoints: []host.Registration{{Entrypoint: task, Order: 50}},
		Telemetry:   host.TelemetryConfig{Logger: zap.New(core)},
	}
	for i, f := range others {
		spec.Entrypoints = append(spec.Entrypoints, host.Registration{Entrypoint: f, Order: i})
	}
	return spec, logs
}

// shutdownReport returns the report's fields.
func shutdownReport(t *testing.T, logs *observer.ObservedLogs) map[string]any {
	t.Helper()
	r := logs.FilterMessage("shutdown report").All()
	if len(r) != 1 {
		t.Fatalf("%d shutdown reports", len(r))
	}
	return r[0].ContextMap()
}

func TestTask(t *testing.T) {
	t.Run("done: the others serve until it ends, then the orderly exit, exit 0", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			http := newFake("http", j)
			http.serve = func(_ context.Context, stop <-chan struct{}) error {
				<-stop
				j.add("http.stop")
				return nil
			}
			spec, logs := taskSpec(t, entrypoint.TaskConfig{Name: "backfill"}, func(ctx context.Context) error {
				time.Sleep(5 * time.Second) // the work
				j.add("task.done")
				return nil
			}, http)
			spec.Budgets.DrainDelay = time.Second
			began := time.Now()
			x := start(t, j, spec)
			err := x.Wait()
			if err != nil || host.ExitCode(err) != 0 {
				t.Fatalf("Run = %v (exit %d), want nil and 0", err, host.ExitCode(err))
			}
			if d := time.Since(began); d != 6*time.Second {
				t.Errorf("ran %s, want the 5s of work + the 1s drain delay", d)
			}
			want := []string{"http.Bind", "task.done", "http.stop", "http.Drain", "http.Stop"}
			if got := names(j); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if !slices.Contains(x.Stages(), host.StageFlush) {
				t.Errorf("no orderly exit: %v", x.Stages())
			}
			rep := shutdownReport(t, logs)
			if rep["result"] != "success" || rep["exit_code"] != int64(0) {
				t.Errorf("report %v, want success and 0", rep)
			}
		})
	})

	t.Run("failed: exit 1", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			boom := errors.New("connection reset")
			spec, logs := taskSpec(t, entrypoint.TaskConfig{Name: "backfill"}, func(context.Context) error { return boom })
			err := hosttest.Start(t, spec).Wait()
			var ee *host.EntrypointError
			if !errors.As(err, &ee) || ee.Entrypoint != "backfill" || !errors.Is(err, boom) {
				t.Fatalf("Run = %v, want an EntrypointError naming the task and wrapping the cause", err)
			}
			if host.ExitCode(err) != host.ExitFailure {
				t.Errorf("exit %d, want 1", host.ExitCode(err))
			}
			if rep := shutdownReport(t, logs); rep["result"] != "failure" || rep["exit_code"] != int64(1) {
				t.Errorf("report %v", rep)
			}
		})
	})

	t.Run("failed permanently: the permanent code, default or configured", func(t *testing.T) {
		for _, c := range []struct{ cfg, want int }{{0, host.ExitPermanent}, {42, 42}} {
			synctest.Test(t, func(t *testing.T) {
				spec, logs := taskSpec(t, entrypoint.TaskConfig{Name: "backfill", PermanentExitCode: c.cfg}, func(context.Context) error {
					return fmt.Errorf("row 7: %w", fault.Permanent(errors.New("bad data")))
				})
				err := hosttest.Start(t, spec).Wait()
				if host.ExitCode(err) != c.want || !fault.IsPermanent(err) {
					t.Errorf("Run = %v, exit %d; want permanent and %d", err, host.ExitCode(err), c.want)
				}
				if rep := shutdownReport(t, logs); rep["exit_code"] != int64(c.want) {
					t.Errorf("report exit_code %v, want %d", rep["exit_code"], c.want)
				}
			})
		}
	})

	t.Run("a stop during the work cancels it with ErrInterrupted; exit 75 even if it returns nil", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			spec, logs := taskSpec(t, entrypoint.TaskConfig{Name: "backfill"}, func(ctx context.Context) error {
				for i := 0; ; i++ {
					if err := entrypoint.Checkpoint(ctx); err != nil {
						j.add("task.checkpoint %d %v", i, err)
						return nil // a careless task that reports success anyway
					}
					time.Sleep(time.Second)
				}
			})
			x := start(t, j, spec)
			x.WaitStage(host.StageServe)
			time.Sleep(2500 * time.Millisecond)
			x.Stop()
			err := x.Wait()
			if !errors.Is(err, fault.ErrInterrupted) || host.ExitCode(err) != host.ExitInterrupted {
				t.Fatalf("Run = %v (exit %d), want ErrInterrupted and 75", err, host.ExitCode(err))
			}
			if got := j.get(); len(got) != 1 || got[0] != "task.checkpoint 3 "+fault.ErrInterrupted.Error() {
				t.Errorf("work saw %v, want the interruption at its next unit boundary", got)
			}
			if rep := shutdownReport(t, logs); rep["result"] != "interrupted" || rep["exit_code"] != int64(75) {
				t.Errorf("report %v, want interrupted and 75", rep)
			}
		})
	})

	t.Run("a stop during startup: the task never runs and the exit is 75", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ran := false
			spec, _ := taskSpec(t, entrypoint.TaskConfig{Name: "backfill"}, func(context.Context) error { ran = true; return nil })
			spec.Warmups = []host.Step{{Name: "slow", Start: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}}
			x := hosttest.Start(t, spec)
			x.WaitStage(host.StageWarmup)
			x.Stop()
			err := x.Wait()
			if host.ExitCode(err) != host.ExitInterrupted || ran {
				t.Errorf("Run = %v (exit %d), ran %v; want 75 and the work not run", err, host.ExitCode(err), ran)
			}
		})
	})

	t.Run("a panicking task is a failure naming it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spec, _ := taskSpec(t, entrypoint.TaskConfig{Name: "reindex"}, func(context.Context) error { panic("nil map") })
			err := hosttest.Start(t, spec).Wait()
			var pe *fault.PanicError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), `task "reindex"`) || host.ExitCode(err) != 1 {
				t.Errorf("Run = %v (exit %d), want a PanicError naming the task and 1", err, host.ExitCode(err))
			}
		})
	})

	t.Run("a non-essential registration does not make a task's failure harmless", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spec, _ := taskSpec(t, entrypoint.TaskConfig{Name: "backfill"}, func(context.Context) error { return errors.New("x") }, newFake("http", &journal{}))
			spec.Entrypoints[0].NonEssential = true
			if err := hosttest.Start(t, spec).Wait(); host.ExitCode(err) != 1 {
				t.Errorf("Run = %v, want exit 1", err)
			}
		})
	})

	t.Run("two tasks: the service ends when the last is done", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spec, _ := taskSpec(t, entrypoint.TaskConfig{Name: "a"}, func(context.Context) error { time.Sleep(time.Second); return nil })
			b, _ := entrypoint.NewTask(entrypoint.TaskConfig{Name: "b"}, func(context.Context) error { time.Sleep(3 * time.Second); return nil })
			spec.Entrypoints = append(spec.Entrypoints, host.Registration{Entrypoint: b})
			began := time.Now()
			err := hosttest.Start(t, spec).Wait()
			if err != nil || time.Since(began) != 3*time.Second {
				t.Errorf("Run = %v after %s, want nil after 3s", err, time.Since(began))
			}
		})
	})
}

func TestTaskBudgetWarnings(t *testing.T) {
	task, _ := entrypoint.NewTask(entrypoint.TaskConfig{Name: "backfill"}, func(context.Context) error { return nil })
	core, logs := observer.New(zap.InfoLevel)
	h, err := host.New(host.AppSpec{
		ServiceName: "x", Probes: probesOff(), Telemetry: host.TelemetryConfig{Logger: zap.New(core)},
		Entrypoints: []host.Registration{{Entrypoint: task}},
	}, env("KUBERNETES_SERVICE_HOST", "10.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.Run(ctx) // interrupted before it began: the budget is logged at bootstrap
	if logs.FilterMessage("shutdown budget").Len() != 1 {
		t.Fatal("no shutdown budget line")
	}
	if n := logs.FilterMessageSnippet("DrainDelay 0").Len(); n != 0 {
		t.Errorf("%d DrainDelay warnings for a service with only a task: no traffic to drain", n)
	}
}

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("run: %w", fault.ErrInterrupted), 75},
		{&host.EntrypointError{Entrypoint: "t", Err: &entrypoint.TaskError{Task: "t", Err: errors.New("x"), Code: 9}}, 9},
		{&entrypoint.TaskError{Task: "t", Err: errors.New("x"), Code: 1}, 1},
		{fmt.Errorf("%w", &fault.ConfigError{}), 78},
	} {
		if got := host.ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
