package host

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/fx"

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

	// Container holds the application's fx modules; it may be nil. Entrypoints,
	// warmups, hooks and checks provided to the fx groups "entrypoints", "warmups",
	// "hooks" and "checks" (see Provide, Warmup, Hook and Check) join those below.
	Container fx.Option

	Entrypoints []Registration
	Warmups     []Step
	// Lifecycle holds hooks and drain phases; it may be nil. The Host runs this
	// registry itself, so a drain phase added to it during startup (a warmup step
	// registering its phase when it starts) runs at the drain and is counted in the
	// shutdown budget logged at ready. The container's hooks are added to it; give
	// each Host a registry of its own.
	Lifecycle *hooks.Registry
	Checks    map[string]health.Check

	Budgets Budgets
	Profile fleet.Profile
	Probes  health.ListenerConfig
	// Telemetry configures logging, tracing and metrics. The zero value logs JSON
	// to stderr and keeps metrics in a fresh Prometheus registry.
	Telemetry TelemetryConfig
}

// Registration adds an entrypoint to a service.
type Registration struct {
	Entrypoint entrypoint.Entrypoint
	// Order is the bind order: ascending, ties in registration order. Drain and
	// Stop run in the reverse order. fx groups are unordered, so it is explicit.
	Order int
	// NonEssential marks an entrypoint whose failure is logged and counted while
	// the rest keep serving. By default an entrypoint is essential: if its Serve
	// fails, the service shuts down and exits non-zero.
	NonEssential bool
	Marks        fleet.Marks
}

// Step is a unit of warmup: priming pools, loading caches, checking migrations.
type Step struct {
	Name string
	// Priority groups steps: groups run in ascending priority, the members of a
	// group concurrently; the first failure cancels the group and aborts startup.
	Priority int
	// Start runs during warmup. Its ctx is cancelled when a stop arrives.
	Start func(ctx context.Context) error
	// Stop, when not nil, runs at cleanup in reverse order of Start, and only for
	// steps whose Start succeeded. Its ctx expires after Budgets.StepTimeout.
	Stop  func(ctx context.Context) error
	Marks fleet.Marks
}

// validate reports every problem of the spec's own fields and of units that arrived
// through the container; regs, steps and hookList are the merged lists.
func validate(spec *AppSpec, regs []Registration, steps []Step, lc lifecycle, checks map[string]health.Check, l *fault.Problems) {
	if spec.ServiceName == "" {
		l.Addf("ServiceName", "must not be empty")
	}
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
		if why := spec.Profile.Check(marksOf(r)); why != "" {
			l.Addf(field, "%s profile: %s", spec.Profile, why)
		}
	}
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
		if why := spec.Profile.Check(s.Marks); why != "" {
			l.Addf(field, "%s profile: %s", spec.Profile, why)
		}
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

// marksOf is a registration's marks, joined with those its entrypoint declares
// itself through a Marks() fleet.Marks method (cronentry.Scheduler does).
func marksOf(r Registration) fleet.Marks {
	m := r.Marks
	if mk, ok := r.Entrypoint.(interface{ Marks() fleet.Marks }); ok {
		own := mk.Marks()
		m.MutatesSharedState = m.MutatesSharedState || own.MutatesSharedState
		m.SingletonGuarded = m.SingletonGuarded || own.SingletonGuarded
		m.RequiresLongRunning = m.RequiresLongRunning || own.RequiresLongRunning
	}
	return m
}

// validateLifecycle reports every problem of the hooks and drain phases in lc.
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
			if why := profile.Check(h.Marks); why != "" {
				l.Addf(field, "%s profile: %s", profile, why)
			}
		}
	}
	for i, p := range lc.phases {
		field := fmt.Sprintf("Lifecycle.DrainPhases[%d]", i)
		if p.Name != "" {
			field = fmt.Sprintf("Lifecycle.DrainPhases[%q]", p.Name)
		}
		if p.Name == "" {
			l.Addf(field, "drain phase has an empty name")
		}
		if p.Run == nil {
			l.Addf(field, "Run is nil")
		}
		if p.MaxDuration < 0 {
			l.Addf(field+".MaxDuration", "must not be negative, got %s", p.MaxDuration)
		}
		if why := profile.Check(p.Marks); why != "" {
			l.Addf(field, "%s profile: %s", profile, why)
		}
	}
}
