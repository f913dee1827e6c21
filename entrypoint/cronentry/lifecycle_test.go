package cronentry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
)

func TestLifecycle(t *testing.T) {
	s := time.Second

	t.Run("Serve returns at stop while ticks keep firing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			x := start(t, []Job{{Name: "job", Every: s, Run: rec.run(0)}}, nil)
			time.Sleep(10*s + s/2)
			x.closeStop() // checks Serve returned nil at once
			before := len(rec.all())
			time.Sleep(10 * s) // the drain delay: still scheduling
			if n := len(rec.all()) - before; n != 10 {
				t.Errorf("%d ticks ran in the 10s after stop, want 10", n)
			}
			x.shutdown()
		})
	})

	t.Run("Drain waits for the running job within the grace and takes no new tick", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			cut := false
			run := func(ctx context.Context, tk Tick) error {
				rec.run(0)(ctx, tk)
				select {
				case <-time.After(30 * s):
				case <-ctx.Done():
					cut = true
				}
				return nil
			}
			x := start(t, []Job{{Name: "report", Every: time.Minute, Run: run}}, nil)
			time.Sleep(time.Minute + s) // the run is 1s into its 30s
			x.closeStop()
			if got := x.s.DrainReport(); got != "not drained" {
				t.Errorf("DrainReport before Drain = %q", got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			begun := time.Now()
			if err := x.s.Drain(ctx); err != nil {
				t.Fatalf("Drain = %v, want nil", err)
			}
			if d := time.Since(begun); d != 29*s {
				t.Errorf("Drain returned after %v, want 29s (the rest of the run)", d)
			}
			if cut {
				t.Error("Drain cancelled the run's ctx")
			}
			want := "running=1 [report@2000-01-01T00:01:00Z] finished=1 [report@2000-01-01T00:01:00Z] still_running=0"
			if got := x.s.DrainReport(); got != want {
				t.Errorf("DrainReport = %q, want %q", got, want)
			}
			time.Sleep(time.Hour)
			if n := len(rec.all()); n != 1 {
				t.Errorf("%d runs, want 1: no tick may be taken after Drain", n)
			}
			if err := x.s.Stop(context.Background()); err != nil {
				t.Errorf("Stop = %v", err)
			}
		})
	})

	t.Run("past the grace Drain names the job and Stop cancels it through its ctx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			runErr := make(chan error, 1)
			run := func(ctx context.Context, _ Tick) error {
				<-ctx.Done()
				runErr <- ctx.Err()
				return ctx.Err()
			}
			x := start(t, []Job{{Name: "report", Every: time.Minute, Run: run}}, nil)
			time.Sleep(time.Minute + s)
			x.closeStop()
			ctx, cancel := context.WithTimeout(context.Background(), 5*s)
			defer cancel()
			err := x.s.Drain(ctx)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "report@2000-01-01T00:01:00Z") {
				t.Fatalf("Drain = %v, want context.DeadlineExceeded naming report", err)
			}
			want := "running=1 [report@2000-01-01T00:01:00Z] finished=0 still_running=1 [report@2000-01-01T00:01:00Z]"
			if got := x.s.DrainReport(); got != want {
				t.Errorf("DrainReport = %q, want %q", got, want)
			}
			if n := x.s.InFlight(); n != 1 {
				t.Errorf("InFlight = %d after Drain expired, want 1", n)
			}
			if err := x.s.Stop(context.Background()); err != nil {
				t.Fatalf("Stop = %v, want nil", err)
			}
			if err := <-runErr; !errors.Is(err, context.Canceled) {
				t.Errorf("run ctx err = %v, want context.Canceled", err)
			}
			if n := x.s.count("report", cancelled); n != 1 {
				t.Errorf("cancelled = %d, want 1", n)
			}
			if n := x.s.InFlight(); n != 0 {
				t.Errorf("InFlight = %d after Stop, want 0", n)
			}
		})
	})

	t.Run("a job ignoring its ctx is abandoned at Stop and named", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			run := func(context.Context, Tick) error { time.Sleep(time.Hour); return nil }
			x := start(t, []Job{{Name: "stubborn", Every: time.Minute, Run: run}}, nil)
			time.Sleep(time.Minute + s)
			x.closeStop()
			ctx, cancel := context.WithTimeout(context.Background(), s)
			defer cancel()
			begun := time.Now()
			err := x.s.Stop(ctx)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stubborn@") {
				t.Fatalf("Stop = %v, want context.DeadlineExceeded naming stubborn", err)
			}
			if d := time.Since(begun); d != s {
				t.Errorf("Stop returned after %v, want 1s (its ctx)", d)
			}
			// A second Stop does nothing: the run the first abandoned stays abandoned.
			begun = time.Now()
			if err := x.s.Stop(context.Background()); err != nil {
				t.Errorf("second Stop = %v", err)
			}
			if d := time.Since(begun); d != 0 {
				t.Errorf("second Stop returned after %v, want at once", d)
			}
			if n := x.s.InFlight(); n != 1 {
				t.Errorf("InFlight = %d after the second Stop, want 1 (the abandoned run)", n)
			}
			time.Sleep(time.Hour) // the abandoned run returns on its own
			if n := x.s.InFlight(); n != 0 {
				t.Errorf("InFlight = %d once the abandoned run returned, want 0", n)
			}
		})
	})

	t.Run("a panic is recovered, counted, and the schedule goes on", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			run := func(ctx context.Context, tk Tick) error {
				rec.run(0)(ctx, tk)
				if tk.Scheduled.Equal(at(s)) {
					panic("boom")
				}
				return nil
			}
			x := start(t, []Job{{Name: "job", Every: s, Run: run}}, nil)
			time.Sleep(3*s + s/2)
			x.shutdown()
			if n := len(rec.all()); n != 3 {
				t.Errorf("%d runs, want 3", n)
			}
			if p, o := x.s.count("job", panicked), x.s.count("job", succeeded); p != 1 || o != 2 {
				t.Errorf("panicked = %d, ok = %d; want 1 and 2", p, o)
			}
		})
	})

	t.Run("an error is counted as failed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			x := start(t, []Job{{Name: "job", Every: s, Run: func(context.Context, Tick) error { return errors.New("no") }}}, nil)
			time.Sleep(2*s + s/2)
			x.shutdown()
			if n := x.s.count("job", failed); n != 2 {
				t.Errorf("failed = %d, want 2", n)
			}
		})
	})

	t.Run("MaxRunTime expires the run's ctx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var took time.Duration
			run := func(ctx context.Context, tk Tick) error {
				<-ctx.Done()
				took = time.Since(tk.Fired)
				return ctx.Err()
			}
			x := start(t, []Job{{Name: "job", Every: time.Minute, MaxRunTime: 10 * s, Run: run}}, nil)
			time.Sleep(time.Minute + 11*s)
			x.shutdown()
			if took != 10*s {
				t.Errorf("run ended after %v, want 10s", took)
			}
			if n := x.s.count("job", failed); n != 1 {
				t.Errorf("failed = %d, want 1: a run past MaxRunTime is a failure", n)
			}
		})
	})

	t.Run("Serve whose ctx ends before stop cancels the runs and returns ctx.Err", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			sc, err := New(Config{Name: "cron"}, []Job{{Name: "job", Every: s, Run: rec.run(time.Hour)}})
			if err != nil {
				t.Fatal(err)
			}
			if err := sc.Bind(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*s)
			defer cancel()
			if err := sc.Serve(ctx, make(chan struct{})); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Serve = %v, want context.DeadlineExceeded", err)
			}
			if err := sc.Stop(context.Background()); err != nil {
				t.Errorf("Stop = %v", err)
			}
			if n := sc.count("job", cancelled); n != 1 {
				t.Errorf("cancelled = %d, want 1", n)
			}
		})
	})

	t.Run("Drain and Stop before Bind do nothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			sc, err := New(Config{Name: "cron"}, []Job{{Name: "job", Every: s, Run: rec.run(0)}})
			if err != nil {
				t.Fatal(err)
			}
			if err := sc.Drain(context.Background()); err != nil {
				t.Errorf("Drain before Bind = %v", err)
			}
			if err := sc.Stop(context.Background()); err != nil {
				t.Errorf("Stop before Bind = %v", err)
			}
			if r := sc.DrainReport(); r != "not drained" {
				t.Errorf("DrainReport = %q after Drain before Bind, want %q", r, "not drained")
			}
			// The Scheduler is still new: it binds, runs its ticks and drains.
			if err := sc.Bind(context.Background()); err != nil {
				t.Fatal(err)
			}
			stop, served := make(chan struct{}), make(chan error, 1)
			go func() { served <- sc.Serve(context.Background(), stop) }()
			time.Sleep(2*s + s/2)
			close(stop)
			if err := <-served; err != nil {
				t.Errorf("Serve = %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := sc.Drain(ctx); err != nil {
				t.Errorf("Drain = %v, want nil: the schedule ends", err)
			}
			if err := sc.Stop(ctx); err != nil {
				t.Errorf("Stop = %v", err)
			}
			if n := len(rec.all()); n != 2 {
				t.Errorf("%d runs, want 2", n)
			}
		})
	})

	t.Run("misuse", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			sc, err := New(Config{Name: "cron"}, []Job{{Name: "job", Every: s, Run: rec.run(0)}})
			if err != nil {
				t.Fatal(err)
			}
			if err := sc.Serve(context.Background(), nil); !errors.Is(err, entrypoint.ErrOutOfTurn) ||
				err.Error() != `entrypoint "cron": Serve called while new: called out of turn` {
				t.Errorf("Serve before Bind = %v, want the out-of-turn error", err)
			}
			if err := sc.Bind(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := sc.Bind(context.Background()); err == nil {
				t.Error("second Bind = nil, want an error")
			}
			if err := sc.Drain(context.Background()); err != nil {
				t.Errorf("Drain without Serve = %v", err)
			}
			if err := sc.Stop(context.Background()); err != nil {
				t.Errorf("Stop without Serve = %v", err)
			}
			if err := sc.Serve(context.Background(), make(chan struct{})); err != nil {
				t.Errorf("Serve after Stop = %v, want nil", err)
			}
			if err := sc.Serve(context.Background(), make(chan struct{})); err != nil {
				t.Errorf("second Serve after Stop = %v, want nil: it starts nothing", err)
			}
			time.Sleep(time.Minute)
			if n := len(rec.all()); n != 0 {
				t.Errorf("%d runs after Stop, want 0", n)
			}
			if sc.Name() != "cron" {
				t.Errorf("Name = %q", sc.Name())
			}
		})
	})
}
