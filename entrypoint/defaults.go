package entrypoint

import (
	"cmp"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
)

// Defaults is the telemetry a Host hands to the entrypoints registered with it: its
// logger (with the service and instance fields, at the configured level), the
// registry its /metrics serves, its tracer provider, the propagator that carries
// trace context across processes and its error reporter. A nil field means the Host
// has none to give.
type Defaults struct {
	Logger         *zap.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
	// Propagator injects and extracts trace context in a transport's headers
	// (OTEL_PROPAGATORS, W3C tracecontext and baggage by default).
	Propagator propagation.TextMapPropagator
	// Reporter receives the failures an entrypoint recovers from on its own — a
	// handler's panic, a dead-lettered message — tagged with the entrypoint and the
	// trace id; nil when TelemetryConfig has none.
	Reporter fault.Reporter
}

// DefaultsUser is implemented by entrypoints that take the Host's telemetry unless
// they were given their own.
//
// The Host calls SetDefaults once, before Bind. An implementation uses each non-nil
// field of d for which no option was given at construction (WithLogger,
// WithRegisterer, WithTracerProvider, WithPropagator, WithReporter) and keeps what it
// was given otherwise — an explicit option always wins: given.Or(d) is that merge.
// SetDefaults after Bind does nothing and returns nil.
//
// SetDefaults returns what it could not take, such as a metrics registration that
// clashes with one already in d.Registerer; the Host then refuses the registration
// with a *fault.ConfigError naming the entrypoint, at New or Register.
type DefaultsUser interface {
	SetDefaults(d Defaults) error
}

// Or returns given with each nil field taken from host: the telemetry an entrypoint
// was given by its own options wins, and the Host's fills in the rest. Every
// DefaultsUser of the module merges this way.
func (given Defaults) Or(host Defaults) Defaults {
	return Defaults{
		Logger:         cmp.Or(given.Logger, host.Logger),
		Registerer:     cmp.Or(given.Registerer, host.Registerer),
		TracerProvider: cmp.Or(given.TracerProvider, host.TracerProvider),
		Propagator:     cmp.Or(given.Propagator, host.Propagator),
		Reporter:       cmp.Or(given.Reporter, host.Reporter),
	}
}
