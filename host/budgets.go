package host

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
)

// Budgets bound each stage of an orderly exit. A zero field takes its default; a
// negative one is a ConfigError. Each can be overridden from the environment with the
// variable named beside it, as a Go duration ("5s", "250ms").
type Budgets struct {
	// DrainDelay is a fixed wait between readiness turning false and the first
	// drain, with every entrypoint still accepting, so that load balancers notice
	// the failing probe before intake stops. It is spent in full on every graceful
	// stop, and skipped when the service never became ready. Set it to the
	// probe's period × failure threshold plus the balancer's own lag; under
	// Kubernetes, 0 drops requests during rollouts. Default 0. SW_DRAIN_DELAY.
	DrainDelay time.Duration
	// DrainPhasesBudget is shared by all drain phases, in order. Default 5s.
	// SW_DRAIN_PHASES_BUDGET.
	DrainPhasesBudget time.Duration
	// DrainGrace is the window in which the entrypoints finish their in-flight
	// work. It covers the whole drain stage, not each entrypoint, so the worst
	// case does not grow with their number. The Host waits 5 s beyond it so an
	// entrypoint that honours the window exactly is not cut short. Default 10s.
	// SW_DRAIN_GRACE.
	DrainGrace time.Duration
	// StepTimeout bounds each step after the drain: each entrypoint's Stop, each
	// shutdown hook, each warmup step's Stop, closing the container and flushing
	// telemetry. Default 2s. SW_STEP_TIMEOUT.
	StepTimeout time.Duration
	// Deadline, when positive, caps the whole exit from the moment a stop is
	// requested: when it expires, the waits still running (drain delay, phases,
	// drains, a cooperative shutdown) are cut short, cleanup starts, and the
	// result is Timeout. Cleanup itself is not cut. Default 0 (none). SW_DEADLINE.
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

// Default budgets.
const (
	DefaultDrainPhasesBudget = 5 * time.Second
	DefaultDrainGrace        = 10 * time.Second
	DefaultStepTimeout       = 2 * time.Second
	DefaultWarmupTimeout     = time.Minute
)

// DrainSlack is how long the Host waits beyond DrainGrace for the drain stage.
const DrainSlack = 5 * time.Second

// budgetEnv maps each override variable to its field.
var budgetEnv = []struct {
	name  string
	field string
	ptr   func(*Budgets) *time.Duration
}{
	{"SW_DRAIN_DELAY", "DrainDelay", func(b *Budgets) *time.Duration { return &b.DrainDelay }},
	{"SW_DRAIN_PHASES_BUDGET", "DrainPhasesBudget", func(b *Budgets) *time.Duration { return &b.DrainPhasesBudget }},
	{"SW_DRAIN_GRACE", "DrainGrace", func(b *Budgets) *time.Duration { return &b.DrainGrace }},
	{"SW_STEP_TIMEOUT", "StepTimeout", func(b *Budgets) *time.Duration { return &b.StepTimeout }},
	{"SW_DEADLINE", "Deadline", func(b *Budgets) *time.Duration { return &b.Deadline }},
	{"TERMINATION_GRACE_PERIOD", "TerminationGracePeriod", func(b *Budgets) *time.Duration { return &b.TerminationGracePeriod }},
	{"SW_WARMUP_TIMEOUT", "WarmupTimeout", func(b *Budgets) *time.Duration { return &b.WarmupTimeout }},
}

// resolve applies environment overrides, checks every field and fills defaults.
// Problems are recorded in l under the field or variable name.
func (b Budgets) resolve(lookup func(string) (string, bool), l *fault.Problems) Budgets {
	for _, e := range budgetEnv {
		v, ok := lookup(e.name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		d, err := parseDuration(v, e.name == "TERMINATION_GRACE_PERIOD")
		switch {
		case err != nil:
			l.Addf(e.name, "not a duration: %q (want e.g. \"5s\" or \"250ms\")", v)
		case d < 0:
			l.Addf(e.name, "must not be negative, got %s", d)
		default:
			*e.ptr(&b) = d
		}
	}
	for _, e := range budgetEnv {
		if d := *e.ptr(&b); d < 0 {
			l.Addf("Budgets."+e.field, "must not be negative, got %s", d)
		}
	}
	if b.DrainPhasesBudget == 0 {
		b.DrainPhasesBudget = DefaultDrainPhasesBudget
	}
	if b.DrainGrace == 0 {
		b.DrainGrace = DefaultDrainGrace
	}
	if b.StepTimeout == 0 {
		b.StepTimeout = DefaultStepTimeout
	}
	if b.WarmupTimeout == 0 {
		b.WarmupTimeout = DefaultWarmupTimeout
	}
	return b
}

// parseDuration reads a Go duration, or whole seconds when seconds is true.
func parseDuration(v string, seconds bool) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if seconds {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Duration(n) * time.Second, nil
		}
	}
	return time.ParseDuration(v)
}

// Units counts what a service registers, for WorstCase.
type Units struct {
	Entrypoints  int
	DrainPhases  int
	PreShutdown  int
	PostShutdown int
	WarmupStops  int
	HasContainer bool
}

// Figure is one term of WorstCase.
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

// WorstCase sums the longest orderly exit for a service with the given units: the
// drain delay (overlapping the wait for Serve to return, at most StepTimeout), the
// drain phases' budget plus the second a phase ignoring cancellation is given, the
// drain window plus its slack, then one StepTimeout for each step after the drain.
// The Deadline, when set, cuts only the waits before cleanup, so it is not counted.
func (b Budgets) WorstCase(u Units) WorstCase {
	var w WorstCase
	add := func(name string, d time.Duration, why string) {
		if d > 0 {
			w.Figures = append(w.Figures, Figure{name, d, why})
			w.Total += d
		}
	}
	if u.Entrypoints > 0 {
		add("drain_delay", max(b.DrainDelay, b.StepTimeout), "DrainDelay, overlapping the wait for Serve to return (StepTimeout)")
	} else {
		add("drain_delay", b.DrainDelay, "DrainDelay")
	}
	if u.DrainPhases > 0 {
		add("drain_phases", b.DrainPhasesBudget+hooks.AbandonAfter, "DrainPhasesBudget + 1s for a phase that ignores cancellation")
	}
	if u.Entrypoints > 0 {
		add("drain", b.DrainGrace+DrainSlack, "DrainGrace + 5s slack")
		add("stop", time.Duration(u.Entrypoints)*b.StepTimeout, fmt.Sprintf("StepTimeout x %d entrypoints", u.Entrypoints))
	}
	add("pre_shutdown", time.Duration(u.PreShutdown)*b.StepTimeout, fmt.Sprintf("StepTimeout x %d hooks", u.PreShutdown))
	add("warmup_stop", time.Duration(u.WarmupStops)*b.StepTimeout, fmt.Sprintf("StepTimeout x %d warmup steps", u.WarmupStops))
	if u.HasContainer {
		add("scope_close", b.StepTimeout, "StepTimeout")
	}
	add("telemetry_flush", b.StepTimeout, "StepTimeout")
	add("post_shutdown", time.Duration(u.PostShutdown)*b.StepTimeout, fmt.Sprintf("StepTimeout x %d hooks", u.PostShutdown))
	return w
}
