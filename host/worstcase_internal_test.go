package host

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
)

func TestWorstCaseFigures(t *testing.T) {
	b := Budgets{DrainDelay: 5 * time.Second, DrainHooksBudget: 3 * time.Second, DrainGrace: 10 * time.Second, StepTimeout: 2 * time.Second}
	step := 2*time.Second + courtesy
	hook := 2*time.Second + 100*time.Millisecond
	w2 := b.worstCase(units{entrypoints: 2, drainHooks: 1, preShutdown: 1, warmupStops: 1, container: true, probes: true})
	// (5 + 2: the delay, then the Serve wait) + (3+1) + (10+1) + 3 steps (2 Stops, the
	// Serve wait) + hook + warmup + scope + flush + probes
	want := 7*time.Second + 4*time.Second + 11*time.Second + 3*step + hook + 4*step
	if w2.Total != want {
		t.Errorf("total = %s, want %s: %s", w2.Total, want, w2)
	}
	// The drain figure does not grow with the number of entrypoints: only Stop does.
	w9 := b.worstCase(units{entrypoints: 9, drainHooks: 1, preShutdown: 1, warmupStops: 1, container: true, probes: true})
	if d := w9.Total - w2.Total; d != 7*step {
		t.Errorf("7 more entrypoints cost %s, want 7 Stops (%s)", d, 7*step)
	}
	for _, f := range w2.Figures {
		if f.Name == "drain" && f.Value != 11*time.Second {
			t.Errorf("drain figure = %s, want DrainGrace + slack", f.Value)
		}
	}
	if !strings.Contains(w2.String(), "drain_delay=7s") || !strings.Contains(w2.String(), "close_scope=") ||
		!strings.Contains(w2.String(), "flush=") || !strings.Contains(w2.String(), "close_probes=") {
		t.Errorf("figures not named after their stages: %s", w2)
	}
	if w2.Fits(40*time.Second) || !w2.Fits(50*time.Second) {
		t.Errorf("fits: 40s %v, 50s %v", w2.Fits(40*time.Second), w2.Fits(50*time.Second))
	}
}

func TestWorstCaseSaturates(t *testing.T) {
	b := Budgets{DrainDelay: maxBudget, DrainHooksBudget: maxBudget, DrainGrace: maxBudget, StepTimeout: maxBudget}
	w := b.worstCase(units{entrypoints: math.MaxInt32, drainHooks: 1, preShutdown: math.MaxInt32, warmupStops: 1, container: true})
	if w.Total <= 0 || w.Total != math.MaxInt64 {
		t.Errorf("total = %d, want the saturated maximum", w.Total)
	}
}

func TestBudgetOverflow(t *testing.T) {
	for _, c := range []struct {
		env, value string
		want       time.Duration // when no problem is expected
		bad        bool
	}{
		{"TERMINATION_GRACE_PERIOD", "9223372036854775807", 0, true},
		{"TERMINATION_GRACE_PERIOD", "18446744074", 0, true},
		{"TERMINATION_GRACE_PERIOD", "99999999999999999999999", 0, true},
		{"TERMINATION_GRACE_PERIOD", "-9223372036854775808", 0, true},
		{"TERMINATION_GRACE_PERIOD", "86400", 24 * time.Hour, false},
		{"TERMINATION_GRACE_PERIOD", "86401", 0, true},
		{"TERMINATION_GRACE_PERIOD", "30", 30 * time.Second, false},
		{"SW_STEP_TIMEOUT", "1000000h", 0, true},
		{"SW_STEP_TIMEOUT", "3000000h", 0, true}, // beyond what a Duration holds
		{"SW_STEP_TIMEOUT", "24h", 24 * time.Hour, false},
		{"SW_DRAIN_GRACE", "24h0m0.000000001s", 0, true},
		{"SW_DEADLINE", "9223372036854775807ns", 0, true},
		{"SW_DRAIN_PHASES_BUDGET", "2s", 0, true}, // renamed SW_DRAIN_HOOKS_BUDGET: refused, not ignored
		{"SW_DRAIN_HOOKS_BUDGET", "2s", 2 * time.Second, false},
	} {
		t.Run(c.env+"="+c.value, func(t *testing.T) {
			var l fault.Problems
			b, _ := Budgets{}.withEnv(func(k string) (string, bool) {
				if k == c.env {
					return c.value, true
				}
				return "", false
			}, &l)
			b = b.resolve(&l)
			err := l.Err()
			if c.bad {
				ce, ok := errors.AsType[*fault.ConfigError](err)
				if !ok || len(ce.Problems) != 1 || ce.Problems[0].Variable != c.env || !strings.HasPrefix(ce.Problems[0].Field, "Budgets.") {
					t.Fatalf("resolve = %v, want one problem naming %s and the field it sets", err, c.env)
				}
				w := b.worstCase(units{entrypoints: 3, preShutdown: 2})
				if w.Total <= 0 {
					t.Errorf("worst case %s after a refused value", w.Total)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got time.Duration
			for _, e := range budgetEnv {
				if e.name == c.env {
					got = *e.ptr(&b)
				}
			}
			if got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	t.Run("spec fields above the ceiling name the field", func(t *testing.T) {
		var l fault.Problems
		_ = Budgets{StepTimeout: 1000000 * time.Hour, DrainGrace: -1}.resolve(&l)
		err := l.Err()
		if err == nil || !strings.Contains(err.Error(), "Budgets.StepTimeout") || !strings.Contains(err.Error(), "Budgets.DrainGrace") {
			t.Errorf("resolve = %v", err)
		}
	})
}

// TestWorstCaseSecondFlush: with an error reporter and something after the flush
// that may report (a post_shutdown hook, the probe listener), the flush counts twice.
func TestWorstCaseSecondFlush(t *testing.T) {
	b := Budgets{StepTimeout: time.Second}
	step := time.Second + courtesy
	flush := func(u units) time.Duration {
		for _, f := range b.worstCase(u).Figures {
			if f.Name == "flush" {
				return f.Value
			}
		}
		return 0
	}
	for _, c := range []struct {
		u    units
		want time.Duration
	}{
		{units{reporter: true, postShutdown: 1}, 2 * step},
		{units{reporter: true, probes: true}, 2 * step},
		{units{reporter: true}, step},
		{units{postShutdown: 1, probes: true}, step},
	} {
		if got := flush(c.u); got != c.want {
			t.Errorf("%+v: flush figure %s, want %s", c.u, got, c.want)
		}
	}
}

// Each capped phase that ignores its cancellation is waited for hooks.AbandonAfter
// before the next runs, so the phases cost Σ(MaxDuration + 1s), never more than the
// budget + 1s; with no phase, a stop during startup waits 1s on the step it cut.
func TestWorstCasePhasesAndStartUnwind(t *testing.T) {
	capped := []time.Duration{200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}
	for _, c := range []struct {
		budget time.Duration
		maxes  []time.Duration
		want   time.Duration
	}{
		{10 * time.Second, capped, 3600 * time.Millisecond},
		{time.Second, capped, 2 * time.Second}, // the budget + 1s is the smaller bound
		{10 * time.Second, []time.Duration{200 * time.Millisecond, 0}, 11 * time.Second},
	} {
		w := Budgets{DrainHooksBudget: c.budget, DrainGrace: time.Second, StepTimeout: time.Second}.
			worstCase(units{entrypoints: 1, drainHooks: len(c.maxes), hooksMax: c.maxes, startSteps: 1})
		if got := figureOf(w, "drain_hooks"); got != c.want {
			t.Errorf("budget %s, phases %v: drain_hooks = %s, want %s", c.budget, c.maxes, got, c.want)
		}
		if got := figureOf(w, "start_unwind"); got != 0 {
			t.Errorf("start_unwind = %s with drain hooks, want none: that exit skips them", got)
		}
	}
	w := Budgets{DrainGrace: time.Second, StepTimeout: time.Second}.worstCase(units{entrypoints: 1, startSteps: 1})
	if got := figureOf(w, "start_unwind"); got != time.Second {
		t.Errorf("start_unwind = %s with no drain hook, want 1s", got)
	}
}

func figureOf(w WorstCase, name string) time.Duration {
	for _, f := range w.Figures {
		if f.Name == name {
			return f.Value
		}
	}
	return 0
}
