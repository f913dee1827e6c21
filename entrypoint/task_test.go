package entrypoint_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/testenv"
)

func TestNewTaskConfig(t *testing.T) {
	work := func(context.Context) error { return nil }
	for _, c := range []struct {
		name  string
		cfg   entrypoint.TaskConfig
		work  func(context.Context) error
		field string
	}{
		{"no name", entrypoint.TaskConfig{}, work, "Name"},
		{"no work", entrypoint.TaskConfig{Name: "t"}, nil, "work"},
		{"code 1", entrypoint.TaskConfig{Name: "t", PermanentExitCode: 1}, work, "PermanentExitCode"},
		{"code 75", entrypoint.TaskConfig{Name: "t", PermanentExitCode: 75}, work, "PermanentExitCode"},
		{"code 78", entrypoint.TaskConfig{Name: "t", PermanentExitCode: 78}, work, "PermanentExitCode"},
		{"code 128+n", entrypoint.TaskConfig{Name: "t", PermanentExitCode: 143}, work, "PermanentExitCode"},
		{"negative code", entrypoint.TaskConfig{Name: "t", PermanentExitCode: -3}, work, "PermanentExitCode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := entrypoint.NewTask(c.cfg, c.work)
			var ce *fault.ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != c.field {
				t.Errorf("NewTask = %v, want one problem with %s", err, c.field)
			}
		})
	}
	task, err := entrypoint.NewTask(entrypoint.TaskConfig{Name: "t"}, work)
	if err != nil || task.PermanentExitCode() != 3 {
		t.Errorf("zero code: %v, %v; want the default", task, err)
	}
}

func TestTaskLifecycle(t *testing.T) {
	t.Run("done before the stop: Serve returns nil and Finished is true", func(t *testing.T) {
		task := bound(t, entrypoint.TaskConfig{Name: "t"}, func(context.Context) error { return nil })
		if err := task.Serve(context.Background(), make(chan struct{})); err != nil || !task.Finished() {
			t.Errorf("Serve = %v, Finished %v", err, task.Finished())
		}
	})

	t.Run("failed: a TaskError with code 1, or the permanent code", func(t *testing.T) {
		for _, c := range []struct {
			err  error
			code int
		}{{errors.New("x"), 1}, {fault.Permanent(errors.New("x")), 7}} {
			task := bound(t, entrypoint.TaskConfig{Name: "t", PermanentExitCode: 7}, func(context.Context) error { return c.err })
			err := task.Serve(context.Background(), make(chan struct{}))
			var te *entrypoint.TaskError
			if !errors.As(err, &te) || te.ExitCode() != c.code || task.Finished() || !strings.Contains(err.Error(), `task "t"`) {
				t.Errorf("Serve = %v, want a TaskError with code %d", err, c.code)
			}
		}
	})

	t.Run("a stop cancels the work with ErrInterrupted; Drain waits for it; never Finished", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var cause error
			task := bound(t, entrypoint.TaskConfig{Name: "t"}, func(ctx context.Context) error {
				<-ctx.Done()
				time.Sleep(time.Second) // the unit in progress ends
				cause = context.Cause(ctx)
				return nil
			})
			if err := serveToStop(task); err != nil {
				t.Errorf("Serve at stop = %v, want nil", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			began := time.Now()
			if err := task.Drain(ctx); err != nil || time.Since(began) != time.Second {
				t.Errorf("Drain = %v after %s, want nil once the unit ended", err, time.Since(began))
			}
			if !errors.Is(cause, fault.ErrInterrupted) || task.Finished() {
				t.Errorf("cause %v, Finished %v; want ErrInterrupted and false", cause, task.Finished())
			}
		})
	})

	t.Run("Checkpoint is nil until the stop, then the cause", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		if err := entrypoint.Checkpoint(ctx); err != nil {
			t.Errorf("Checkpoint = %v before the stop", err)
		}
		cancel(fault.ErrInterrupted)
		if err := entrypoint.Checkpoint(ctx); !errors.Is(err, fault.ErrInterrupted) {
			t.Errorf("Checkpoint = %v after the stop", err)
		}
	})

	t.Run("Drain and Stop before Serve do nothing, and the work never runs", func(t *testing.T) {
		ran := false
		task := bound(t, entrypoint.TaskConfig{Name: "t"}, func(context.Context) error { ran = true; return nil })
		if task.Drain(context.Background()) != nil || task.Stop(context.Background()) != nil || task.Finished() {
			t.Error("a task never served must drain and stop at once, unfinished")
		}
		if err := task.Serve(context.Background(), make(chan struct{})); err != nil || ran {
			t.Errorf("Serve after Stop = %v, ran %v; want nil and nothing run", err, ran)
		}
	})

	t.Run("calls out of turn are refused with ErrOutOfTurn", func(t *testing.T) {
		task, _ := entrypoint.NewTask(entrypoint.TaskConfig{Name: "t"}, func(context.Context) error { return nil })
		if err := task.Serve(context.Background(), make(chan struct{})); !errors.Is(err, entrypoint.ErrOutOfTurn) {
			t.Errorf("Serve before Bind = %v", err)
		}
		if err := task.Bind(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := task.Bind(context.Background()); !errors.Is(err, entrypoint.ErrOutOfTurn) {
			t.Errorf("second Bind = %v", err)
		}
		if err := task.Serve(context.Background(), make(chan struct{})); err != nil {
			t.Fatal(err)
		}
		err := task.Serve(context.Background(), make(chan struct{}))
		if !errors.Is(err, entrypoint.ErrOutOfTurn) || !strings.Contains(err.Error(), `entrypoint "t": Serve called while serving`) {
			t.Errorf("second Serve = %v", err)
		}
	})
}

// bound returns a Task made of cfg and work, bound as the Host binds it.
func bound(t *testing.T, cfg entrypoint.TaskConfig, work func(context.Context) error, opts ...entrypoint.Option) *entrypoint.Task {
	t.Helper()
	return boundWith(t, entrypoint.Telemetry{}, cfg, work, opts...)
}

// serveToStop serves task in a synctest bubble until its work blocks, then closes the
// stop, and returns what Serve returned.
func serveToStop(task *entrypoint.Task) error {
	stop := make(chan struct{})
	served := make(chan error)
	go func() { served <- task.Serve(context.Background(), stop) }()
	synctest.Wait()
	close(stop)
	return <-served
}

// boundWith is bound with the Host's telemetry d handed over before Bind.
func boundWith(t *testing.T, d entrypoint.Telemetry, cfg entrypoint.TaskConfig, work func(context.Context) error, opts ...entrypoint.Option) *entrypoint.Task {
	t.Helper()
	task, err := entrypoint.NewTask(cfg, work, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.SetDefaults(d); err != nil {
		t.Fatal(err)
	}
	if err := task.Bind(context.Background()); err != nil {
		t.Fatal(err)
	}
	return task
}

func TestTaskReportsPanics(t *testing.T) {
	t.Run("a panic Serve returns is left to the Host to report", func(t *testing.T) {
		host := &testenv.Reports{}
		task := boundWith(t, entrypoint.Telemetry{Reporter: host}, entrypoint.TaskConfig{Name: "backfill"},
			func(context.Context) error { panic("nil map") })
		err := task.Serve(context.Background(), make(chan struct{}))
		if _, ok := errors.AsType[*fault.PanicError](err); !ok {
			t.Fatalf("Serve = %v, want the panic", err)
		}
		if errs, _ := host.Get(); len(errs) != 0 {
			t.Errorf("reported %v as well", errs)
		}
	})
	for _, tc := range []struct {
		name   string
		ownRep bool
	}{
		{"a panic after the stop, which Serve does not return, goes to the Host's reporter", false},
		{"WithTelemetry's reporter wins over the Host's", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				host, own := &testenv.Reports{}, &testenv.Reports{}
				cfg := entrypoint.TaskConfig{Name: "backfill"}
				want, other := host, own
				var opts []entrypoint.Option
				if tc.ownRep {
					opts, want, other = []entrypoint.Option{entrypoint.WithTelemetry(entrypoint.Telemetry{Reporter: own})}, own, host
				}
				task := boundWith(t, entrypoint.Telemetry{Reporter: host}, cfg, func(ctx context.Context) error {
					<-ctx.Done()
					panic("cleanup failed")
				}, opts...)
				if err := serveToStop(task); err != nil {
					t.Fatalf("Serve = %v, want nil at the stop", err)
				}
				if err := task.Drain(context.Background()); err != nil {
					t.Fatal(err)
				}
				errs, tags := want.Get()
				if len(errs) != 1 {
					t.Fatalf("%d reports, want the one panic", len(errs))
				}
				if pe, ok := errors.AsType[*fault.PanicError](errs[0]); !ok || pe.Value != "cleanup failed" || tags[0][fault.TagEntrypoint] != "backfill" {
					t.Errorf("reported %v with %v, want the work's *fault.PanicError tagged entrypoint=backfill", errs[0], tags[0])
				}
				if errs, _ := other.Get(); len(errs) != 0 {
					t.Errorf("the other reporter got %v", errs)
				}
			})
		})
	}
}
