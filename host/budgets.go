package host

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
)

// Budgets bound each stage of an orderly exit. A zero field takes its default; a
// negative one, or one above 24h, is a ConfigError. Each can be overridden from
// the environment with the variable named beside it, as a Go duration ("5s", "250ms").
type Budgets struct {
	// DrainDelay is a fixed wait between readiness turning false and the first
	// drain, with every entrypoint still accepting, so that load balancers notice
	// the failing probe before intake stops. It is spent in full on every graceful
	// stop, and skipped when the service never became ready. Set it to the
	// probe's period × failure threshold plus the balancer's own lag; under
	// Kubernetes, 0 drops requests during rollouts. Default 0. SW_DRAIN_DELAY.
	DrainDelay time.Duration
	// DrainHooksBudget is shared by all drain hooks, in order. Default 3s.
	// SW_DRAIN_HOOKS_BUDGET.
	DrainHooksBudget time.Duration
	// DrainGrace is the window in which the entrypoints finish their in-flight
	// work. Every entrypoint's Drain starts at the same moment and each gets the
	// whole window, so one slow drain never shortens another's and the worst
	// case does not grow with their number. The Host waits 1 s beyond it so an
	// entrypoint that honours the window exactly is not cut short. A cooperative
	// shutdown's wait for MarkApplicationDrained ends with the window too.
	// Default 10s. SW_DRAIN_GRACE.
	DrainGrace time.Duration
	// StepTimeout bounds each step after the drain: each entrypoint's Stop, the
	// wait for Serve to return, each shutdown hook, each warmup step's Stop,
	// closing the container, flushing telemetry and closing the probe listener.
	// Default 1s. SW_STEP_TIMEOUT.
	StepTimeout time.Duration
	// Deadline, when positive, caps the waits of the exit from the moment a stop
	// is requested: when it expires, the waits still running — the drain delay
	// and the wait for Serve in it, the drain hooks (PreStop's too), the drains,
	// a cooperative wait — are cut short, and the result is Timeout; the report's
	// cut_short names the stage it expired in. What follows still runs, each part
	// under its own limit: each entrypoint's Stop and the wait for Serve after it
	// (StepTimeout each), then every cleanup step. So an exit whose Deadline
	// expires lasts at most Deadline + the stop and cleanup figures of WorstCase.
	// Default 0 (none). SW_DEADLINE.
	Deadline time.Duration
	// TerminationGracePeriod is how long the orchestrator waits after SIGTERM
	// before it kills the process (Kubernetes' terminationGracePeriodSeconds,
	// 30s by default). When known, the Host warns at startup if WorstCase does
	// not fit it with 10% headroom. TERMINATION_GRACE_PERIOD, in seconds or as
	// a Go duration.
	TerminationGracePeriod time.Duration
	// WarmupTimeout bounds the whole warmup stage: a step still running when it
	// expires has its ctx cancelled and fails startup, naming the step, so a
	// dependency that accepts connections and never answers cannot keep the service
	// in warmup forever. A step that ignores its ctx is abandoned shortly after. It
	// is not part of the exit, so WorstCase does not count it. Default 1m.
	// SW_WARMUP_TIMEOUT.
	WarmupTimeout time.Duration
}

// Default budgets. They are sized so that a service like the example — six
// entrypoints, a drain hook, a shutdown hook, a container, an error reporter and the
// probe listener — has a worst-case exit within Kubernetes' default grace period
// (30 s) with 10% headroom when its phases declare a MaxDuration, and within the
// period itself when they do not (docs/budgets.md).
const (
	defaultDrainHooksBudget = 3 * time.Second
	defaultDrainGrace       = 10 * time.Second
	defaultStepTimeout      = time.Second
	defaultWarmupTimeout    = time.Minute
)

// maxBudget is the largest value any budget may take, from the spec or the
// environment. A larger one is a ConfigError naming the field or variable: no exit is
// meant to last a day, and the ceiling keeps every sum of budgets far from overflow.
const maxBudget = 24 * time.Hour

// drainSlack is how long the Host waits beyond DrainGrace for a Drain to return: the
// second a drain hook that ignores its cancellation is given (hooks.AbandonAfter),
// ample for a Drain that honours its ctx to return.
const drainSlack = hooks.AbandonAfter

// budgetEnv maps each override variable to its field.
var budgetEnv = []struct {
	name  string
	field string
	ptr   func(*Budgets) *time.Duration
}{
	{"SW_DRAIN_DELAY", "DrainDelay", func(b *Budgets) *time.Duration { return &b.DrainDelay }},
	{"SW_DRAIN_HOOKS_BUDGET", "DrainHooksBudget", func(b *Budgets) *time.Duration { return &b.DrainHooksBudget }},
	{"SW_DRAIN_GRACE", "DrainGrace", func(b *Budgets) *time.Duration { return &b.DrainGrace }},
	{"SW_STEP_TIMEOUT", "StepTimeout", func(b *Budgets) *time.Duration { return &b.StepTimeout }},
	{"SW_DEADLINE", "Deadline", func(b *Budgets) *time.Duration { return &b.Deadline }},
	{"TERMINATION_GRACE_PERIOD", "TerminationGracePeriod", func(b *Budgets) *time.Duration { return &b.TerminationGracePeriod }},
	{"SW_WARMUP_TIMEOUT", "WarmupTimeout", func(b *Budgets) *time.Duration { return &b.WarmupTimeout }},
}

// renamedEnv are budget variables an earlier release read, each with the field it
// set and the variable that replaced it. Setting one is a problem that names the new
// variable, so that a deployment still setting the old one does not lose its value
// without a word.
var renamedEnv = []struct{ old, field, now string }{
	{"SW_DRAIN_PHASES_BUDGET", "DrainHooksBudget", "SW_DRAIN_HOOKS_BUDGET"},
}

// budgetVars names, for each Budgets field whose value came from the environment,
// the variable it came from ("DrainGrace" → "SW_DRAIN_GRACE"), so that a problem
// found later with that value names the variable the user set.
type budgetVars map[string]string

// of is the variable field's value came from, or "".
func (v budgetVars) of(field string) string { return v[field] }

// withEnv applies the environment's overrides, read through lookup. A bad value is
// recorded in l under the field ("Budgets.DrainGrace") and its variable, and the
// field set to 0; so is a variable that was renamed (renamedEnv). It returns the variables the values came from.
func (b Budgets) withEnv(lookup func(string) (string, bool), l *fault.Problems) (Budgets, budgetVars) {
	fromEnv := budgetVars{}
	for _, r := range renamedEnv {
		if v, ok := lookup(r.old); ok && strings.TrimSpace(v) != "" {
			l.AddEnvf("Budgets."+r.field, r.old, "was renamed %s: set that instead", r.now)
		}
	}
	for _, e := range budgetEnv {
		v, ok := lookup(e.name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		fromEnv[e.field] = e.name
		d, err := parseDuration(v, e.name == "TERMINATION_GRACE_PERIOD")
		field := "Budgets." + e.field
		switch {
		case err != nil:
			l.AddEnvf(field, e.name, "%v (want e.g. \"5s\" or \"250ms\", at most %s)", err, maxBudget)
		case d < 0:
			l.AddEnvf(field, e.name, "must not be negative, got %s", d)
		case d > maxBudget:
			l.AddEnvf(field, e.name, "%s is above the ceiling of %s", d, maxBudget)
		default:
			*e.ptr(&b) = d
			continue
		}
		*e.ptr(&b) = 0 // reported; keep the figures sane for what follows
	}
	return b, fromEnv
}

// resolve checks every field and fills defaults, recording each problem in l under
// its field ("Budgets.DrainGrace"). A value withEnv took is in range already.
func (b Budgets) resolve(l *fault.Problems) Budgets {
	for _, e := range budgetEnv {
		switch d := *e.ptr(&b); {
		case d < 0:
			l.Addf("Budgets."+e.field, "must not be negative, got %s", d)
			*e.ptr(&b) = 0
		case d > maxBudget:
			l.Addf("Budgets."+e.field, "%s is above the ceiling of %s", d, maxBudget)
			*e.ptr(&b) = 0
		}
	}
	if b.DrainHooksBudget == 0 {
		b.DrainHooksBudget = defaultDrainHooksBudget
	}
	if b.DrainGrace == 0 {
		b.DrainGrace = defaultDrainGrace
	}
	if b.StepTimeout == 0 {
		b.StepTimeout = defaultStepTimeout
	}
	if b.WarmupTimeout == 0 {
		b.WarmupTimeout = defaultWarmupTimeout
	}
	return b
}

// parseDuration reads a Go duration, or whole seconds when seconds is true. A value
// that does not fit a time.Duration is an error, never a wrapped-around figure.
func parseDuration(v string, seconds bool) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if seconds {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			if n > int64(maxBudget/time.Second) || n < -int64(maxBudget/time.Second) {
				return 0, fmt.Errorf("%s seconds is above the ceiling of %s", v, maxBudget)
			}
			return time.Duration(n) * time.Second, nil
		} else if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("%s seconds is above the ceiling of %s", v, maxBudget)
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("not a duration: %q", v)
	}
	return d, nil
}

// addSat is a+b, saturating at the largest Duration instead of wrapping around.
func addSat(a, b time.Duration) time.Duration {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulSat is n×d for n, d ≥ 0, saturating at the largest Duration.
func mulSat(n int, d time.Duration) time.Duration {
	if n <= 0 || d <= 0 {
		return 0
	}
	if d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return time.Duration(n) * d
}

// checkTimeoutEnv applies SW_CHECK_TIMEOUT, the readiness checks' own budget, over
// the spec's Probes.CheckTimeout. Unlike a field left at zero (which takes the
// default), a value set on purpose must be positive: no check answers within 0s.
func checkTimeoutEnv(lookup func(string) (string, bool), d time.Duration, l *fault.Problems) time.Duration {
	v, ok := lookup("SW_CHECK_TIMEOUT")
	if !ok || strings.TrimSpace(v) == "" {
		return d
	}
	got, err := parseDuration(v, false)
	switch {
	case err != nil:
		l.AddEnvf("Probes.CheckTimeout", "SW_CHECK_TIMEOUT", "%v (want e.g. \"2s\" or \"500ms\")", err)
	case got <= 0:
		l.AddEnvf("Probes.CheckTimeout", "SW_CHECK_TIMEOUT", "must be positive, got %s", got)
	case got > maxBudget:
		l.AddEnvf("Probes.CheckTimeout", "SW_CHECK_TIMEOUT", "%s is above the ceiling of %s", got, maxBudget)
	default:
		return got
	}
	return d
}
