package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
)

// Container is a dependency-injection container: the units it builds join the
// service's, and what it opens has a scope the Host bounds. Package hostfx implements
// it with fx; the Host itself uses no reflection and links no container.
//
// The Host calls Build once, in New, after the telemetry and before validation. The
// Scope it returns is opened at StageOpenScope (pools open) and closed at
// StageCloseScope (pools close), each within its bounded step; Close runs only when
// Open succeeded.
type Container interface {
	// Build makes the container's values — constructors run, nothing opens — and
	// adds its entrypoints, warmups, hooks and checks through b. A
	// *fault.ConfigError (a graph error: a missing type, a cycle; or a constructor's
	// own ConfigError) makes New fail with exit code 78; any other error (a
	// constructor that failed for a runtime reason) is a startup failure, exit 1.
	// A nil Scope has nothing to open or close.
	Build(b *Builder) (Scope, error)
}

// Scope is what a Container opened: Open at StageOpenScope, Close at
// StageCloseScope, in reverse of what Open did.
type Scope interface {
	Open(ctx context.Context) error
	Close(ctx context.Context) error
}

// Builder is the Host under construction as a Container sees it: what the Host
// built first (its logger, telemetry, shutdown handle, instance — through Host),
// and where the container's units go. It is valid during Build only.
type Builder struct {
	h        *Host
	problems *fault.Problems
}

// Host returns the Host being built. Its accessors (Logger, Shutdown, Instance,
// Registerer, TracerProvider, MeterProvider, Propagator, Reporter, PreStop) work;
// Run, Register and Main must not be called from Build.
func (b *Builder) Host() *Host { return b.h }

// Lifecycle is the Host's own registry of hooks and drain hooks, read beside
// AppSpec.Lifecycle. What is added until startup reaches pre_start is taken in.
func (b *Builder) Lifecycle() *hooks.Registry { return b.h.lifecycle }

// Registry is the Prometheus registry the Host serves at /metrics.
func (b *Builder) Registry() *prometheus.Registry { return b.h.tel.reg }

// Monitor returns the Host's Monitor (see Host.Monitor) over AppSpec.Checks and
// checks — those the container adds with Check, which a Monitor must know when it is
// built — building it at the first call; later calls return the same Monitor,
// whatever their checks. It adds no check: Check does.
func (b *Builder) Monitor(checks map[string]health.Check) (*health.Monitor, error) {
	extra := make([]namedCheck, 0, len(checks))
	for name, c := range checks {
		extra = append(extra, namedCheck{name, c})
	}
	return b.h.buildMonitor(extra)
}

// Register adds entrypoints, validated by New with AppSpec.Entrypoints.
func (b *Builder) Register(regs ...Registration) { b.h.regs = append(b.h.regs, regs...) }

// Warmup adds warmup steps, validated by New with AppSpec.Warmups.
func (b *Builder) Warmup(steps ...Step) { b.h.steps = append(b.h.steps, steps...) }

// Check adds a readiness check. A name already in use is a problem New reports.
func (b *Builder) Check(name string, c health.Check) {
	if _, dup := b.h.checks[name]; dup {
		b.problems.Addf(fmt.Sprintf("Checks[%q]", name), "name is used by more than one check")
		return
	}
	b.h.checks[name] = c
}

// buildContainer builds the spec's container. A ConfigError is recorded in l under
// "Container"; any other error is returned, as a startup failure.
func (h *Host) buildContainer(l *fault.Problems) error {
	scope, err := h.spec.Container.Build(&Builder{h: h, problems: l})
	if err != nil {
		if ce, ok := errors.AsType[*fault.ConfigError](err); ok {
			l.Merge("Container", ce)
			return nil
		}
		return &StartupError{Stage: StageCreated, Err: fmt.Errorf("build container: %w", err)}
	}
	h.scope = scope
	return nil
}

// namedCheck is a check with its name, for buildMonitor.
type namedCheck struct {
	Name  string
	Check health.Check
}
