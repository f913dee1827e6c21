package host

import (
	"fmt"
	"strings"
	"time"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/internal/hookrun"
)

// units counts what a service registered, for WorstCase.
type units struct {
	entrypoints  int
	drainHooks   int
	hooksMax     []time.Duration // each hook's MaxDuration (0: none)
	startSteps   int             // warmup steps, start hooks and Binds a stop may cut short
	preShutdown  int
	postShutdown int
	warmupStops  int
	container    bool
	closers      int // OnClose's steps
	probes       bool
	reporter     bool // an error reporter, flushed again after post_shutdown and close_probes
}

// Figure is one term of WorstCase. Name is the stage that spends it, as the stage
// is named in the shutdown report, the metrics and /debug/lifecycle, or start_unwind
// for the wait on a startup step that a stop cut short.
type Figure struct {
	Name  string
	Value time.Duration
	Why   string
}

// WorstCase is the longest an orderly exit can take, figure by figure.
type WorstCase struct {
	Figures []Figure
	Total   time.Duration
}

// String lists the figures as "name=value" pairs followed by the total.
func (w WorstCase) String() string {
	parts := make([]string, len(w.Figures))
	for i, f := range w.Figures {
		parts[i] = fmt.Sprintf("%s=%s", f.Name, f.Value)
	}
	return strings.Join(parts, " + ") + " = " + w.Total.String()
}

// Fits reports whether the worst case fits grace with at least 10% headroom.
func (w WorstCase) Fits(grace time.Duration) bool {
	return w.Total <= grace-grace/10
}

// worstCase sums, without overflow, the longest orderly exit of a service with the
// given units; each figure bounds one stage of the exit as teardown runs it:
//
//   - drain_delay: the DrainDelay, then the wait for Serve to return (StepTimeout).
//     On a plain stop the two overlap; on the PreStop path PreStop spends the delay
//     before the stop, and the wait for Serve comes after it, so the figure is their
//     sum: it bounds both paths;
//   - start_unwind: a stop during startup cancels the step running (a warmup
//     group, a start hook, a Bind) and waits hooks.AbandonAfter for it before
//     abandoning it. That exit skips the drain hooks, whose figure is larger, so
//     it is counted only when there are no drain hooks;
//   - drain_hooks: each hook costs its window plus the second it is given when it
//     ignores its cancellation: the sum, over the hooks, of MaxDuration + 1s, but
//     never more than DrainHooksBudget + 1s, since no hook starts once the budget
//     is spent and each is given at most what is left of it;
//   - drain: one DrainGrace window shared by every Drain, which run concurrently,
//     plus the slack before one is abandoned; a cooperative wait ends with the
//     window, so it is counted even with no entrypoint;
//   - stop: each entrypoint's Stop in turn, then the wait for Serve to return, each
//     StepTimeout plus the courtesy before an abandonment;
//   - pre_shutdown, post_shutdown: StepTimeout plus the unwind each hook is given;
//   - warmup_stop, close_scope, close_probes: StepTimeout plus the courtesy;
//   - flush: StepTimeout plus the courtesy, twice with an error reporter and
//     something after the flush that may report (a post_shutdown hook, the probe
//     listener): the reporter is flushed once more for it.
//
// The worst case is measured from the moment PreStop is called, or from the stop
// when it is not: what PreStop runs (the delay, the drain hooks) is in the figures.
//
// The Deadline, when set, cuts the waits before cleanup (the drain delay, the wait
// for Serve in it, the drain hooks, the drains, a cooperative wait) but not what follows:
// each entrypoint's Stop, the wait for Serve after it and every cleanup step still
// run, each under its own limit. An exit with a Deadline is thus bounded by the
// smaller of this sum and Deadline + stop + the cleanup figures; only the sum is
// logged.
func (b Budgets) worstCase(u units) WorstCase {
	var w WorstCase
	add := func(s Stage, d time.Duration, why string) {
		if d > 0 {
			w.Figures = append(w.Figures, Figure{s.String(), d, why})
			w.Total = addSat(w.Total, d)
		}
	}
	step := addSat(b.StepTimeout, courtesy)
	hook := addSat(b.StepTimeout, hookrun.ShutdownUnwind)
	if u.entrypoints > 0 {
		add(StageDrainDelay, addSat(b.DrainDelay, b.StepTimeout), "DrainDelay + the wait for Serve to return (StepTimeout), in turn on the PreStop path")
	} else {
		add(StageDrainDelay, b.DrainDelay, "DrainDelay")
	}
	if u.drainHooks > 0 {
		whole := addSat(b.DrainHooksBudget, hooks.AbandonAfter)
		if capped := phasesCost(u.hooksMax); capped > 0 && capped < whole {
			add(StageDrainHooks, capped, fmt.Sprintf("MaxDuration + 1s for each of %d drain hooks, each of which may ignore cancellation", u.drainHooks))
		} else {
			add(StageDrainHooks, whole, "DrainHooksBudget + 1s for the last hook, which may ignore cancellation")
		}
	} else if u.startSteps > 0 {
		w.Figures = append(w.Figures, Figure{"start_unwind", hooks.AbandonAfter,
			"1s for a warmup step, start hook or Bind that ignores the stop's cancellation"})
		w.Total = addSat(w.Total, hooks.AbandonAfter)
	}
	if u.entrypoints > 0 {
		add(StageDrain, addSat(b.DrainGrace, drainSlack), "DrainGrace + 1s slack, every Drain at once")
		add(StageStop, mulSat(u.entrypoints+1, step), fmt.Sprintf("StepTimeout x (%d entrypoints + the wait for Serve)", u.entrypoints))
	} else {
		add(StageDrain, b.DrainGrace, "DrainGrace, for a cooperative wait")
	}
	add(StagePreShutdown, mulSat(u.preShutdown, hook), fmt.Sprintf("StepTimeout x %d hooks", u.preShutdown))
	add(StageWarmupStop, mulSat(u.warmupStops, step), fmt.Sprintf("StepTimeout x %d warmup steps", u.warmupStops))
	if n := u.closers + b2i(u.container); n > 0 {
		add(StageCloseScope, mulSat(n, step), fmt.Sprintf("StepTimeout x %d (the container and OnClose's steps)", n))
	}
	if u.reporter && (u.postShutdown > 0 || u.probes) {
		add(StageFlush, mulSat(2, step), "StepTimeout x 2: the flush, and the reporter's again for what came after it")
	} else {
		add(StageFlush, step, "StepTimeout")
	}
	add(StagePostShutdown, mulSat(u.postShutdown, hook), fmt.Sprintf("StepTimeout x %d hooks", u.postShutdown))
	if u.probes {
		add(StageCloseProbes, step, "StepTimeout")
	}
	return w
}

// defaultK8sGrace is Kubernetes' default terminationGracePeriodSeconds.
const defaultK8sGrace = 30 * time.Second

// b2i is 1 for true.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hooksMax lists the phases' MaxDuration, for phasesCost.
func hooksMax(phases []hooks.DrainHook) []time.Duration {
	out := make([]time.Duration, len(phases))
	for i, p := range phases {
		out[i] = p.MaxDuration
	}
	return out
}

// phasesCost is the longest the phases can take when each declares a MaxDuration:
// each is given at most its MaxDuration and, ignoring its cancellation, is abandoned
// hooks.AbandonAfter later, so each costs MaxDuration + AbandonAfter. It is 0 when
// a phase declares none (it may take the whole budget).
func phasesCost(maxes []time.Duration) time.Duration {
	var sum time.Duration
	for _, m := range maxes {
		if m <= 0 {
			return 0
		}
		sum = addSat(sum, addSat(m, hooks.AbandonAfter))
	}
	return sum
}
