package entrypoint

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/wait"
)

// jobQueue is the shape of the README's custom entrypoint: one job at a time from a
// channel, each taken job finished.
func jobQueue(jobs <-chan string, handled chan<- string, hold time.Duration) Work {
	return gatedQueue(nil, jobs, handled, hold)
}

// gatedQueue is jobQueue admitting each job through g, when not nil, while it
// handles it inline: the Runner then counts it in flight.
func gatedQueue(g *Gate, jobs <-chan string, handled chan<- string, hold time.Duration) Work {
	return func(ctx context.Context, draining <-chan struct{}) error {
		for {
			select {
			case <-draining:
				return nil
			case job := <-jobs:
				leave := func() {}
				if g != nil {
					leave, _ = g.Enter()
				}
				select {
				case <-time.After(hold):
				case <-ctx.Done():
					leave()
					return ctx.Err()
				}
				leave()
				handled <- job
			}
		}
	}
}

func TestRunner(t *testing.T) {
	t.Run("Stop before Serve returns at once, and so does a second Stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := NewRunner("queue")
			if err := r.Bind(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			began := time.Now()
			if err := r.Drain(ctx); err != nil {
				t.Errorf("Drain before Serve = %v", err)
			}
			if err := r.Stop(ctx); err != nil {
				t.Errorf("Stop before Serve = %v", err)
			}
			if err := r.Stop(ctx); err != nil {
				t.Errorf("second Stop = %v", err)
			}
			if d := time.Since(began); d != 0 {
				t.Errorf("took %s, want no wait", d)
			}
			if err := r.Serve(ctx, make(chan struct{}), func(context.Context, <-chan struct{}) error {
				t.Error("work started after Stop")
				return nil
			}); err != nil {
				t.Errorf("Serve after Stop = %v, want nil", err)
			}
		})
	})

	t.Run("Serve returns at stop with the work still taking jobs; Drain finishes the one taken", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			jobs := make(chan string, 3)
			handled := make(chan string, 3)
			r := NewRunner("queue")
			r.Bind(context.Background(), nil)
			stop := make(chan struct{})
			served := make(chan error, 1)
			go func() {
				served <- r.Serve(context.Background(), stop, gatedQueue(r.Gate(), jobs, handled, time.Second))
			}()
			close(stop)
			if err := <-served; err != nil {
				t.Fatalf("Serve = %v", err)
			}
			synctest.Wait()
			if n := r.InFlight(); n != 0 {
				t.Errorf("InFlight = %d with the work idle, waiting for a job, want 0", n)
			}
			jobs <- "after-stop" // still taken: the drain delay keeps serving
			synctest.Wait()
			if n := r.InFlight(); n != 1 {
				t.Errorf("InFlight = %d with the work handling a job, want 1", n)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := r.Drain(ctx); err != nil {
				t.Fatalf("Drain = %v", err)
			}
			if got := <-handled; got != "after-stop" {
				t.Errorf("handled %q", got)
			}
			jobs <- "after-drain"
			if err := r.Stop(ctx); err != nil {
				t.Errorf("Stop = %v", err)
			}
			if len(handled) != 0 || len(jobs) != 1 {
				t.Errorf("a job sent after the drain was taken: handled %d, queued %d", len(handled), len(jobs))
			}
			if n := r.InFlight(); n != 0 {
				t.Errorf("InFlight = %d after Stop", n)
			}
		})
	})

	t.Run("Drain waits for units admitted through the Gate", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := NewRunner("conns")
			r.Bind(context.Background(), nil)
			stop := make(chan struct{})
			go r.Serve(context.Background(), stop, func(ctx context.Context, draining <-chan struct{}) error {
				leave, ok := r.Gate().Enter()
				if !ok {
					t.Error("refused while serving")
				}
				go func() { defer leave(); time.Sleep(3 * time.Second) }()
				<-draining
				return nil
			})
			synctest.Wait()
			close(stop)
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := r.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(began); d != 3*time.Second {
				t.Errorf("Drain returned after %s, want 3s (the admitted unit)", d)
			}
			if _, ok := r.Gate().Enter(); ok {
				t.Error("the Gate admits work after the drain")
			}
			r.Stop(ctx)
		})
	})

	t.Run("Drain on expiry returns ctx's error and Stop cuts the work", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			jobs := make(chan string, 1)
			handled := make(chan string, 1)
			r := NewRunner("queue")
			r.Bind(context.Background(), nil)
			stop := make(chan struct{})
			go r.Serve(context.Background(), stop, jobQueue(jobs, handled, time.Hour))
			jobs <- "long"
			synctest.Wait()
			close(stop)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := r.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Drain = %v, want DeadlineExceeded", err)
			}
			sctx, scancel := context.WithTimeout(context.Background(), time.Second)
			defer scancel()
			if err := r.Stop(sctx); err != nil {
				t.Errorf("Stop = %v: the work's ctx should have cut it", err)
			}
		})
	})

	t.Run("the Host giving up cancels the work and waits for it at most wait.AbandonAfter", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			for _, tc := range []struct {
				name      string
				work      Work
				abandoned bool
			}{
				{"work that heeds its ctx", func(ctx context.Context, _ <-chan struct{}) error { <-ctx.Done(); return ctx.Err() }, false},
				{"work that ignores it", func(context.Context, <-chan struct{}) error { time.Sleep(time.Hour); return nil }, true},
			} {
				r := NewRunner("queue")
				r.Bind(context.Background(), nil)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				began := time.Now()
				err := r.Serve(ctx, make(chan struct{}), tc.work)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, fault.ErrAbandoned) != tc.abandoned {
					t.Errorf("%s: Serve = %v, want DeadlineExceeded, abandoned %v", tc.name, err, tc.abandoned)
				}
				if waited := time.Since(began); waited > time.Second+wait.AbandonAfter {
					t.Errorf("%s: Serve returned after %s, more than the ctx and wait.AbandonAfter", tc.name, waited)
				}
				sctx, scancel := context.WithTimeout(context.Background(), 2*time.Hour)
				if err := r.Stop(sctx); err != nil { // the abandoned work ends within the bubble
					t.Errorf("%s: Stop = %v", tc.name, err)
				}
				scancel()
			}
		})
	})

	t.Run("work that returns before stop fails Serve", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := NewRunner("queue")
			r.Bind(context.Background(), nil)
			err := r.Serve(context.Background(), make(chan struct{}), func(context.Context, <-chan struct{}) error { return nil })
			if !errors.Is(err, ErrReturnedEarly) {
				t.Errorf("Serve = %v, want ErrReturnedEarly", err)
			}
			boom := errors.New("boom")
			r2 := NewRunner("queue")
			r2.Bind(context.Background(), nil)
			if err := r2.Serve(context.Background(), make(chan struct{}), func(context.Context, <-chan struct{}) error { return boom }); !errors.Is(err, boom) {
				t.Errorf("Serve = %v, want the work's error", err)
			}
			r.Stop(context.Background())
			r2.Stop(context.Background())
		})
	})

	t.Run("a panic in the work is an error naming the entrypoint", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := NewRunner("queue")
			r.Bind(context.Background(), nil)
			err := r.Serve(context.Background(), make(chan struct{}), func(context.Context, <-chan struct{}) error { panic("bad") })
			var pe *fault.PanicError
			if !errors.As(err, &pe) || pe.What != `entrypoint "queue" work` {
				t.Errorf("Serve = %v, want a *fault.PanicError for the work", err)
			}
		})
	})

	t.Run("Bind out of turn and a failed open", func(t *testing.T) {
		r := NewRunner("queue")
		fail := errors.New("no port")
		if err := r.Bind(context.Background(), func(context.Context) error { return fail }); !errors.Is(err, fail) {
			t.Errorf("Bind = %v", err)
		}
		if err := r.Bind(context.Background(), nil); err != nil {
			t.Errorf("retried Bind = %v", err)
		}
		if err := r.Bind(context.Background(), nil); !errors.Is(err, ErrOutOfTurn) {
			t.Errorf("second Bind = %v, want ErrOutOfTurn", err)
		}
	})
}
