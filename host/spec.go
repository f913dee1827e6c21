package host

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
)

// AppSpec declares a service: what it runs, what it needs before it can run, and how
// long each stage of its exit may take. It is plain data; New validates it.
type AppSpec struct {
	// ServiceName names the service in logs, metrics and probes. Required.
	ServiceName string
	// Instance identifies this replica in locks, logs and /debug/lifecycle. When
	// empty it is taken from the INSTANCE_ID environment variable, then from
	// "hostname-pid".
	Instance string

	// Container builds the application's values; it may be nil. The entrypoints,
	// warmups, hooks and checks it adds join those below. hostfx.Container makes
	// one of fx modules.
	Container Container

	// Entrypoints are what the service serves: each is bound in Order at startup,
	// served until the stop, drained with the others at once and stopped in
	// reverse Order. More can be added with Host.Register before Run.
	Entrypoints []Registration
	// Warmups run before anything is bound, by Priority group; their Stop runs at
	// cleanup, in reverse, for those whose Start succeeded.
	Warmups []Step
	// Lifecycle holds the hooks and drain hooks; it may be nil. What is registered
	// on it until startup reaches pre_start (by the container's OnStart hooks, or a
	// warmup step) is taken in then, validated and counted in the worst case; what
	// is registered later is refused, and the refusal logged.
	Lifecycle *hooks.Registry
	// Checks are the readiness checks /readyz answers from beside the Host's own
	// state, by name. The Host runs each in the background from startup on (its
	// Monitor, started), every CheckInterval under Probes.CheckTimeout unless the
	// check has its own timing (health.Every); a probe reads the last results and
	// never waits on a dependency.
	Checks map[string]health.Check
	// CheckInterval is how often each check runs: the load the checks put on a
	// dependency, whatever the number of probes. 0 means 5s; SW_CHECK_INTERVAL
	// overrides it. Negative, or not longer than Probes.CheckTimeout, is a
	// ConfigError.
	CheckInterval time.Duration

	// Budgets bound each stage of the exit; zero fields take their defaults and
	// SW_* variables override them.
	Budgets Budgets
	// Profile is the fleet posture: fleet.Fleet refuses a unit that mutates shared
	// state unguarded, fleet.Serverless one that needs a long-running process.
	Profile fleet.Profile
	// Probes configures the probe listener (/livez, /readyz, /metrics,
	// /debug/lifecycle); set Disabled to run without it.
	Probes health.ListenerConfig
	// Telemetry configures logging, tracing and metrics. The zero value logs JSON
	// to stderr and keeps metrics in a fresh Prometheus registry.
	Telemetry TelemetryConfig
}

// Registration adds an entrypoint to a service.
type Registration struct {
	Entrypoint entrypoint.Entrypoint
	// Order is the bind order: ascending, ties in registration order. Stop runs in
	// the reverse order; Drain runs on every entrypoint at once. fx groups are
	// unordered, so it is explicit.
	Order int
	// NonEssential marks an entrypoint whose failure is logged and counted while
	// the rest keep serving, and which the Host restarts: it calls Serve again after
	// the shared jittered backoff (about 1 s, doubling up to 30 s, started over once
	// it served 30 s), logging each restart and counting it in
	// servicewright_entrypoint_restarts_total. A failure marked fault.Permanent is
	// not restarted, and an entrypoint that cannot serve twice refuses the second
	// Serve (entrypoint.ErrOutOfTurn); either stays failed, said once in the log.
	// entrypoint.Runner and kafkaentry.Consumer serve again (entrypoint.Loop too, but
	// its only failure is permanent); an http or grpc server whose listener broke
	// refuses, as it cannot listen again; cronentry's and leader's Serve never fail
	// on their own; a task's failure always ends the service. By default an
	// entrypoint is essential: if its Serve fails, the service shuts down and exits
	// non-zero.
	NonEssential bool
	// GatesReadiness makes a NonEssential entrypoint's failure withdraw readiness
	// (503 "failing", with a gating check named "entrypoint:<name>") until its
	// restart serves again, for a replica that is no use without it. Without it a
	// failure keeps readiness as it is. On an essential entrypoint it is refused: its
	// failure already ends the service.
	GatesReadiness bool
	// Marks adds fleet marks to those the entrypoint declares itself (through a
	// Marks() fleet.Marks method). It may add a mark, never lift one: an entrypoint
	// that declares itself not SingletonGuarded stays so whatever Marks says.
	Marks fleet.Marks
}

// Step is a unit of warmup: priming pools, loading caches, checking migrations.
type Step struct {
	// Name names the step in logs and errors; it must be non-empty and unique.
	Name string
	// Priority groups steps: groups run in ascending priority, the members of a
	// group concurrently; the first failure cancels the group and aborts startup.
	Priority int
	// Start runs during warmup. Its ctx is cancelled when a stop arrives.
	Start func(ctx context.Context) error
	// Backend names what Start waits on, as a type and an address ("postgres
	// db.internal:5432"), for the warning logged while Start has not returned (after
	// 2s, then at a backoff) and for the error when the warmup budget
	// runs out. Never a URL with its credentials. Empty: the step is named alone.
	Backend string
	// Stop, when not nil, runs at cleanup in reverse order of Start, and only for
	// steps whose Start succeeded. Its ctx expires after Budgets.StepTimeout.
	Stop func(ctx context.Context) error
	// Marks are the step's fleet marks, checked against AppSpec.Profile.
	Marks fleet.Marks
}

// validate reports every problem of the spec's own fields and of units that arrived
// through the container; regs, steps and hookList are the merged lists.
func validate(spec *AppSpec, regs []Registration, steps []Step, lc lifecycle, checks map[string]health.Check, l *fault.Problems) {
	if spec.ServiceName == "" {
		l.Addf("ServiceName", "must not be empty")
	}
	validateEntrypoints(spec, regs, l)
	stepNames := map[string]int{}
	for i, s := range steps {
		field := fmt.Sprintf("Warmups[%d]", i)
		if s.Name != "" {
			field = fmt.Sprintf("Warmups[%q]", s.Name)
		}
		switch {
		case s.Name == "":
			l.Addf(field, "step has an empty name")
		case s.Start == nil:
			l.Addf(field, "Start is nil")
		}
		if s.Name != "" {
			if stepNames[s.Name]++; stepNames[s.Name] == 2 {
				l.Addf(field, "name is used by more than one warmup step")
			}
		}
		checkMarks(spec.Profile, field, s.Marks, kindStep, l)
	}
	validateLifecycle(spec.Profile, lc, l)
	for name, c := range checks {
		if name == "" {
			l.Addf("Checks", "a check has an empty name")
		}
		if c == nil {
			l.Addf(fmt.Sprintf("Checks[%q]", name), "check is nil")
		}
	}
	l.Merge("Probes", spec.Probes.Validate())
}

func instanceID(spec *AppSpec, lookup func(string) (string, bool)) string {
	if spec.Instance != "" {
		return spec.Instance
	}
	if v, ok := lookup("INSTANCE_ID"); ok && v != "" {
		return v
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// marksOf is an entrypoint's marks: those it declares itself through a Marks()
// fleet.Marks method (cronentry's Scheduler does), joined with its registration's.
// A registration may add a mark, never lift one the entrypoint sets itself: when the
// entrypoint declares its own marks, it alone says whether it is SingletonGuarded.
// own reports whether it declared any.
func marksOf(r Registration) (m fleet.Marks, own bool) {
	m = r.Marks
	mk, ok := r.Entrypoint.(fleet.Marker)
	if !ok {
		return m, false
	}
	o := mk.Marks()
	m.MutatesSharedState = m.MutatesSharedState || o.MutatesSharedState
	m.RequiresLongRunning = m.RequiresLongRunning || o.RequiresLongRunning
	m.SingletonGuarded = o.SingletonGuarded
	return m, true
}

// unit kinds, for the remedy a fleet problem names.
const (
	kindEntrypoint = iota
	kindOwnMarks   // an entrypoint that declares its own marks
	kindStep       // a warmup step, a hook or a drain hook
)

// checkMarks adds the profile's problem with m, if any, naming the remedy for kind.
func checkMarks(profile fleet.Profile, field string, m fleet.Marks, kind int, l *fault.Problems) {
	why := profile.Check(m)
	if why == "" {
		return
	}
	if profile == fleet.Fleet && m.MutatesSharedState && !m.SingletonGuarded {
		switch kind {
		case kindOwnMarks:
			why = "mutates shared state and declares itself not singleton-guarded; a registration cannot mark it guarded. " +
				"For a cron scheduler, give each job that mutates shared state OncePerFleet (cronentry.Job.OncePerFleet)"
		case kindEntrypoint:
			why = "mutates shared state but is not singleton-guarded: guard its work (a cron job: cronentry.Job.OncePerFleet; " +
				"other work: run it under leadership) and mark the registration SingletonGuarded"
		default:
			why = "mutates shared state but is not singleton-guarded: build it with leader.NewSingleton, so one replica runs it"
		}
	}
	l.Addf(field, "%s profile: %s", profile, why)
}

// validateEntrypoints reports every problem of regs: a nil entrypoint, an empty or
// duplicate name, marks the profile refuses.
func validateEntrypoints(spec *AppSpec, regs []Registration, l *fault.Problems) {
	names := map[string]int{}
	for i, r := range regs {
		field := fmt.Sprintf("Entrypoints[%d]", i)
		if r.Entrypoint == nil {
			l.Addf(field, "entrypoint is nil")
			continue
		}
		name := r.Entrypoint.Name()
		if name == "" {
			l.Addf(field, "entrypoint has an empty name")
			continue
		}
		field = fmt.Sprintf("Entrypoints[%q]", name)
		if names[name]++; names[name] == 2 {
			l.Addf(field, "name is used by more than one entrypoint")
		}
		if r.GatesReadiness && !r.NonEssential {
			l.Addf(field+".GatesReadiness", "is for a NonEssential entrypoint: an essential one's failure ends the service")
		}
		m, own := marksOf(r)
		if own && r.Marks.SingletonGuarded && !m.SingletonGuarded {
			l.Addf(field+".Marks.SingletonGuarded", "the entrypoint declares itself not singleton-guarded; a registration may add marks, never lift this one")
		}
		kind := kindEntrypoint
		if own {
			kind = kindOwnMarks
		}
		checkMarks(spec.Profile, field, m, kind, l)
	}
}

// checkDrainTimes refuses an entrypoint that needs longer to give up what it holds
// than its drain window: every Drain gets the whole DrainGrace, so a leadership
// whose term would outlive it leaves the next leader waiting out the lease's TTL.
// vars names the variable DrainGrace came from, if any, so the refusal names it.
func checkDrainTimes(regs []Registration, grace time.Duration, vars budgetVars, l *fault.Problems) {
	from := ""
	if v := vars.of("DrainGrace"); v != "" {
		from = ", set by " + v
	}
	for _, r := range regs {
		st := entrypoint.Capabilities(r.Entrypoint).DrainTimer
		if st == nil {
			continue
		}
		if need := st.DrainTime(); need > grace {
			l.AddEnvf(fmt.Sprintf("Entrypoints[%q]", r.Entrypoint.Name()), vars.of("DrainGrace"),
				"needs up to %s to end its work in Drain, more than Budgets.DrainGrace (%s%s): raise the grace or shorten its timings",
				need, grace, from)
		}
	}
}

// validateLifecycle reports every problem of the hooks and drain hooks in lc.
func validateLifecycle(profile fleet.Profile, lc lifecycle, l *fault.Problems) {
	for _, k := range hookKinds {
		for i, h := range lc.hooks[k] {
			field := fmt.Sprintf("Lifecycle.%s[%d]", k, i)
			if h.Name != "" {
				field = fmt.Sprintf("Lifecycle.%s[%q]", k, h.Name)
			}
			if h.Name == "" {
				l.Addf(field, "hook has an empty name")
			}
			if h.Run == nil {
				l.Addf(field, "hook func is nil")
			}
			checkMarks(profile, field, h.Marks, kindStep, l)
		}
	}
	for i, p := range lc.phases {
		field := fmt.Sprintf("Lifecycle.DrainHooks[%d]", i)
		if p.Name != "" {
			field = fmt.Sprintf("Lifecycle.DrainHooks[%q]", p.Name)
		}
		if p.Name == "" {
			l.Addf(field, "drain hook has an empty name")
		}
		if p.Run == nil {
			l.Addf(field, "Run is nil")
		}
		if p.MaxDuration < 0 {
			l.Addf(field+".MaxDuration", "must not be negative, got %s", p.MaxDuration)
		}
		checkMarks(profile, field, p.Marks, kindStep, l)
	}
}
