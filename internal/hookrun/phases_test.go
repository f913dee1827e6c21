package hookrun

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// call is what a phase saw when it was called.
type call struct {
	at       time.Duration // since the test started
	allowed  time.Duration // the figure passed
	deadline time.Duration // time from the call to its ctx's deadline
}

// recorder builds phases that note each call. It is used inside one synctest bubble.
// An abandoned phase's goroutine is not ordered with the next phase, hence the lock.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	calls map[string]call
}

func (r *recorder) call(name string) call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[name]
}

func newRecorder() *recorder { return &recorder{start: time.Now(), calls: map[string]call{}} }

// phase returns a phase that records its call and then does body.
func (r *recorder) phase(name string, max time.Duration, body func(ctx context.Context) error) hooks.DrainHook {
	return hooks.DrainHook{Name: name, MaxDuration: max, Run: func(ctx context.Context, allowed time.Duration) error {
		d, _ := ctx.Deadline()
		r.mu.Lock()
		r.calls[name] = call{at: time.Since(r.start), allowed: allowed, deadline: time.Until(d)}
		r.mu.Unlock()
		return body(ctx)
	}}
}

func sleep(d time.Duration) func(context.Context) error {
	return func(context.Context) error { time.Sleep(d); return nil }
}

func waitCtx(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

func check(t *testing.T, r PhaseResult, name string, o Outcome, took time.Duration) {
	t.Helper()
	if r.Name != name || r.Outcome != o || r.Duration != took {
		t.Errorf("phase %q: %s after %v (err %v); want %q %s after %v", r.Name, r.Outcome, r.Duration, r.Err, name, o, took)
	}
}

func TestDrainHooks(t *testing.T) {
	t.Run("runs phases in the order given, as hooks.Registry sorts them", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var reg hooks.Registry
			var ran []string
			for _, p := range []struct {
				name  string
				order int
			}{{"c", 3}, {"a1", 1}, {"b", 2}, {"a2", 1}} {
				reg.AddDrainHook(hooks.DrainHook{Name: p.name, Order: p.order, Run: func(context.Context, time.Duration) error {
					ran = append(ran, p.name)
					return nil
				}})
			}
			rep := DrainHooks(context.Background(), reg.DrainHooks(), 10*time.Second, nil)
			want := []string{"a1", "a2", "b", "c"}
			if !equal(ran, want) || !equal(resultNames(rep.Phases), want) {
				t.Fatalf("ran %v, reported %v; want %v", ran, resultNames(rep.Phases), want)
			}
		})
	})

	t.Run("allowed is min of MaxDuration and budget left, and equals the ctx deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			phases := []hooks.DrainHook{
				rec.phase("capped", 3*time.Second, sleep(time.Second)),       // min(3s, 10s)
				rec.phase("cap-above", 20*time.Second, sleep(2*time.Second)), // min(20s, 9s)
				rec.phase("last", 4*time.Second, sleep(0)),                   // min(4s, 7s)
			}
			rep := DrainHooks(context.Background(), phases, 10*time.Second, nil)
			for i, want := range []time.Duration{3 * time.Second, 9 * time.Second, 4 * time.Second} {
				c := rec.call(phases[i].Name)
				if c.allowed != want || c.deadline != want || rep.Phases[i].Allowed != want {
					t.Errorf("%s: allowed %v, deadline in %v, reported %v; want %v",
						phases[i].Name, c.allowed, c.deadline, rep.Phases[i].Allowed, want)
				}
				if rep.Phases[i].Outcome != Completed || rep.Phases[i].Err != nil {
					t.Errorf("%s: %s, %v", phases[i].Name, rep.Phases[i].Outcome, rep.Phases[i].Err)
				}
			}
			if rep.Duration != 3*time.Second {
				t.Errorf("report duration %v, want 3s", rep.Duration)
			}
		})
	})

	t.Run("phase without MaxDuration takes all that is left", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			phases := []hooks.DrainHook{
				rec.phase("first", 0, sleep(1500*time.Millisecond)),
				rec.phase("second", 0, sleep(0)),
			}
			DrainHooks(context.Background(), phases, 5*time.Second, nil)
			if c := rec.call("first"); c.allowed != 5*time.Second || c.deadline != 5*time.Second {
				t.Errorf("first: %+v, want all 5s", c)
			}
			if c := rec.call("second"); c.allowed != 3500*time.Millisecond || c.deadline != c.allowed {
				t.Errorf("second: %+v, want the 3.5s left", c)
			}
		})
	})

	t.Run("overrun is cancelled at its deadline and the next runs with the rest", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			var cause error
			phases := []hooks.DrainHook{
				rec.phase("slow", 3*time.Second, func(ctx context.Context) error {
					<-ctx.Done()
					cause = context.Cause(ctx)
					return ctx.Err()
				}),
				rec.phase("quiet-overrun", 2*time.Second, func(ctx context.Context) error { <-ctx.Done(); return nil }),
				rec.phase("next", 0, sleep(0)),
			}
			rep := DrainHooks(context.Background(), phases, 10*time.Second, nil)
			check(t, rep.Phases[0], "slow", Overran, 3*time.Second)
			check(t, rep.Phases[1], "quiet-overrun", Overran, 2*time.Second)
			check(t, rep.Phases[2], "next", Completed, 0)
			if !errors.Is(cause, hooks.ErrDrainHookDeadline) || !errors.Is(rep.Phases[0].Err, context.DeadlineExceeded) {
				t.Errorf("cause %v, err %v", cause, rep.Phases[0].Err)
			}
			if !errors.Is(rep.Phases[1].Err, hooks.ErrDrainHookDeadline) {
				t.Errorf("overrun returning nil: err %v, want hooks.ErrDrainHookDeadline", rep.Phases[1].Err)
			}
			if c := rec.call("next"); c.at != 5*time.Second || c.allowed != 5*time.Second {
				t.Errorf("next: %+v, want called at 5s with 5s", c)
			}
		})
	})

	t.Run("ignoring cancellation is abandoned exactly hooks.AbandonAfter past the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release) // the abandoned goroutine must end inside the bubble
			rec := newRecorder()
			phases := []hooks.DrainHook{
				rec.phase("deaf", 2*time.Second, func(context.Context) error { <-release; return nil }),
				rec.phase("next", 0, sleep(0)),
			}
			rep := DrainHooks(context.Background(), phases, 10*time.Second, nil)
			check(t, rep.Phases[0], "deaf", Abandoned, 2*time.Second+hooks.AbandonAfter)
			if err := rep.Phases[0].Err; !errors.Is(err, fault.ErrAbandoned) || !strings.Contains(err.Error(), `drain hook "deaf"`) {
				t.Errorf("err = %v", err)
			}
			// The extra second counts against the budget: 10s - 3s.
			if c := rec.call("next"); c.at != 3*time.Second || c.allowed != 7*time.Second {
				t.Errorf("next: %+v, want called at 3s with 7s", c)
			}
		})
	})

	t.Run("less than minPhaseTime left is skipped, exactly minPhaseTime runs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			called := false
			phases := []hooks.DrainHook{
				{Name: "long", Run: func(context.Context, time.Duration) error { time.Sleep(900 * time.Millisecond); return nil }},
				{Name: "just-enough", Run: func(_ context.Context, allowed time.Duration) error {
					if allowed != minPhaseTime {
						t.Errorf("allowed %v, want %v", allowed, minPhaseTime)
					}
					time.Sleep(50 * time.Millisecond)
					return nil
				}},
				{Name: "too-late", Run: func(context.Context, time.Duration) error { called = true; return nil }},
			}
			rep := DrainHooks(context.Background(), phases, time.Second, nil)
			check(t, rep.Phases[1], "just-enough", Completed, 50*time.Millisecond)
			check(t, rep.Phases[2], "too-late", Skipped, 0)
			if called || !errors.Is(rep.Phases[2].Err, ErrBudgetSpent) || rep.Phases[2].Allowed != 0 {
				t.Errorf("skipped phase: called %v, %+v", called, rep.Phases[2])
			}
		})
	})

	t.Run("zero budget skips every phase", func(t *testing.T) {
		rep := DrainHooks(context.Background(), []hooks.DrainHook{{Name: "a"}, {Name: "b"}}, 0, nil)
		for _, r := range rep.Phases {
			if r.Outcome != Skipped || !errors.Is(r.Err, ErrBudgetSpent) {
				t.Errorf("%+v", r)
			}
		}
	})

	t.Run("failing phase does not stop the next", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			errHandOver := errors.New("peer refused the lease")
			rec := newRecorder()
			phases := []hooks.DrainHook{
				rec.phase("hand-over", 0, func(context.Context) error { time.Sleep(time.Second); return errHandOver }),
				rec.phase("next", 0, sleep(0)),
			}
			rep := DrainHooks(context.Background(), phases, 4*time.Second, nil)
			check(t, rep.Phases[0], "hand-over", Failed, time.Second)
			check(t, rep.Phases[1], "next", Completed, 0)
			if !errors.Is(rep.Phases[0].Err, errHandOver) || rec.call("next").allowed != 3*time.Second {
				t.Errorf("err %v, next %+v", rep.Phases[0].Err, rec.call("next"))
			}
		})
	})

	t.Run("panicking phase fails with a PanicError naming it and the next runs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			phases := []hooks.DrainHook{
				rec.phase("explode", 0, func(context.Context) error { panic("boom") }),
				rec.phase("next", 0, sleep(0)),
			}
			rep := DrainHooks(context.Background(), phases, 4*time.Second, nil)
			check(t, rep.Phases[0], "explode", Failed, 0)
			check(t, rep.Phases[1], "next", Completed, 0)
			var pe *fault.PanicError
			if !errors.As(rep.Phases[0].Err, &pe) || pe.What != `drain hook "explode"` || pe.Value != "boom" {
				t.Errorf("err = %v", rep.Phases[0].Err)
			}
		})
	})

	t.Run("parent cancelled cancels the running phase and skips the rest", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(time.Second, cancel)
			rec := newRecorder()
			phases := []hooks.DrainHook{
				rec.phase("running", 5*time.Second, waitCtx),
				rec.phase("later", 0, sleep(0)),
				rec.phase("last", 0, sleep(0)),
			}
			rep := DrainHooks(ctx, phases, 10*time.Second, nil)
			check(t, rep.Phases[0], "running", Interrupted, time.Second)
			check(t, rep.Phases[1], "later", Skipped, 0)
			check(t, rep.Phases[2], "last", Skipped, 0)
			if !errors.Is(rep.Phases[0].Err, context.Canceled) || !errors.Is(rep.Phases[1].Err, context.Canceled) {
				t.Errorf("errs %v, %v", rep.Phases[0].Err, rep.Phases[1].Err)
			}
			if len(rec.calls) != 1 || rep.Duration != time.Second {
				t.Errorf("calls %v, total %v", rec.calls, rep.Duration)
			}
		})
	})

	t.Run("parent cancelled and phase deaf to it is abandoned a second later", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(time.Second, cancel)
			phases := []hooks.DrainHook{
				{Name: "deaf", Run: func(context.Context, time.Duration) error { <-release; return nil }},
				{Name: "later", Run: func(context.Context, time.Duration) error { return nil }},
			}
			rep := DrainHooks(ctx, phases, 10*time.Second, nil)
			check(t, rep.Phases[0], "deaf", Abandoned, time.Second+hooks.AbandonAfter)
			check(t, rep.Phases[1], "later", Skipped, 0)
		})
	})

	t.Run("parent already cancelled skips every phase", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rep := DrainHooks(ctx, []hooks.DrainHook{{Name: "a"}, {Name: "b"}}, time.Minute, nil)
		for _, r := range rep.Phases {
			if r.Outcome != Skipped || !errors.Is(r.Err, context.Canceled) {
				t.Errorf("%+v", r)
			}
		}
	})

	t.Run("parent deadline shortens allowed and interrupts the phase", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			rec := newRecorder()
			phases := []hooks.DrainHook{rec.phase("a", 5*time.Second, waitCtx), rec.phase("b", 0, sleep(0))}
			rep := DrainHooks(ctx, phases, 10*time.Second, nil)
			if c := rec.call("a"); c.allowed != 2*time.Second || c.deadline != 2*time.Second {
				t.Errorf("a: %+v, want 2s", c)
			}
			check(t, rep.Phases[0], "a", Interrupted, 2*time.Second)
			check(t, rep.Phases[1], "b", Skipped, 0)
			if !errors.Is(rep.Phases[0].Err, context.DeadlineExceeded) {
				t.Errorf("err %v", rep.Phases[0].Err)
			}
		})
	})

	t.Run("every outcome is logged with the phase name", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			core, logs := observer.New(zap.DebugLevel)
			phases := []hooks.DrainHook{
				{Name: "ok", Run: func(context.Context, time.Duration) error { return nil }},
				{Name: "bad", Run: func(context.Context, time.Duration) error { return errors.New("x") }},
				{Name: "slow", MaxDuration: time.Second, Run: func(ctx context.Context, _ time.Duration) error { return waitCtx(ctx) }},
				{Name: "deaf", MaxDuration: time.Second, Run: func(context.Context, time.Duration) error { <-release; return nil }},
				{Name: "late", Run: func(context.Context, time.Duration) error { return nil }},
			}
			rep := DrainHooks(context.Background(), phases, 3*time.Second, zap.New(core))
			want := map[string]Outcome{"ok": Completed, "bad": Failed, "slow": Overran, "deaf": Abandoned, "late": Skipped}
			for name, o := range want {
				entries := logs.FilterField(zap.String("phase", name)).All()
				if len(entries) != 1 || entries[0].ContextMap()["outcome"] != o.String() {
					t.Errorf("phase %s: log entries %+v, want one with outcome %s", name, entries, o)
				}
			}
			if rep.Duration != 3*time.Second {
				t.Errorf("total %v", rep.Duration)
			}
		})
	})
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{
		Skipped: "skipped", Completed: "completed", Failed: "failed", Overran: "overran",
		Interrupted: "interrupted", Abandoned: "abandoned", Outcome(42): "Outcome(42)",
	} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}

func equal(a, b []string) bool { return slices.Equal(a, b) }

func resultNames(rs []PhaseResult) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}
