package entrypoint_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
)

// A task stopped mid-unit counts the unit in flight while it runs, and logs its stop
// with the unit's error once the work returns — whether the stop cut a unit or the
// work reached a checkpoint.
func TestTaskStopMidUnit(t *testing.T) {
	for _, c := range []struct {
		name    string
		unit    func(ctx context.Context, i int) error // one unit; ctx is the work's
		wantErr string
	}{
		{"the stop cuts a unit", func(ctx context.Context, i int) error {
			select { // a query that honours its ctx
			case <-time.After(time.Second):
				return nil
			case <-ctx.Done():
				return fmt.Errorf("order b%d: %w", i, ctx.Err())
			}
		}, "order b3: context canceled"},
		{"the work stops at its next checkpoint", func(ctx context.Context, i int) error {
			time.Sleep(time.Second) // a unit that ignores its ctx
			return nil
		}, fault.ErrInterrupted.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				core, logs := observer.New(zap.DebugLevel)
				task := bound(t, entrypoint.TaskConfig{Name: "backfill"}, func(ctx context.Context) error {
					for i := 1; ; i++ {
						if err := entrypoint.Checkpoint(ctx); err != nil {
							return err
						}
						if err := c.unit(ctx, i); err != nil {
							return err
						}
					}
				}, entrypoint.WithTelemetry(entrypoint.Telemetry{Logger: zap.New(core)}))
				if n := task.InFlight(); n != 0 {
					t.Errorf("InFlight before Serve = %d, want 0", n)
				}
				stop := make(chan struct{})
				served := make(chan error, 1)
				go func() { served <- task.Serve(context.Background(), stop) }()
				time.Sleep(2500 * time.Millisecond) // mid-unit 3
				close(stop)
				if err := <-served; err != nil {
					t.Fatalf("Serve = %v", err)
				}
				if n := task.InFlight(); n != 1 {
					t.Errorf("InFlight at the drain = %d, want 1: the unit in flight", n)
				}
				if err := task.Drain(context.Background()); err != nil {
					t.Fatalf("Drain = %v", err)
				}
				if n := task.InFlight(); n != 0 {
					t.Errorf("InFlight after the drain = %d, want 0", n)
				}
				lines := logs.FilterMessageSnippet("task stopped").All()
				if len(lines) != 1 {
					t.Fatalf("%d stop lines, want 1: %v", len(lines), logs.All())
				}
				if got := lines[0].ContextMap(); got["task"] != "backfill" || got["error"] != c.wantErr {
					t.Errorf("stop line %v, want task backfill and error %q", got, c.wantErr)
				}
				if task.Finished() {
					t.Error("Finished after a stop")
				}
			})
		})
	}
}

// Work that ignores its ctx past Stop's deadline is abandoned, and Stop says so.
func TestTaskStopAbandonedIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.DebugLevel)
		release := make(chan struct{})
		task := bound(t, entrypoint.TaskConfig{Name: "stuck"}, func(context.Context) error {
			<-release
			return nil
		}, entrypoint.WithTelemetry(entrypoint.Telemetry{Logger: zap.New(core)}))
		stop := make(chan struct{})
		served := make(chan error, 1)
		go func() { served <- task.Serve(context.Background(), stop) }()
		synctest.Wait()
		close(stop)
		<-served
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := task.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Stop = %v, want the deadline", err)
		}
		if n := logs.FilterMessageSnippet("abandoned mid-unit").Len(); n != 1 {
			t.Errorf("%d abandonment lines, want 1", n)
		}
		close(release)
		synctest.Wait()
		if n := logs.FilterMessageSnippet("task stopped before its work was done").Len(); n != 1 {
			t.Errorf("%d stop lines once the work returned, want 1", n)
		}
	})
}
