package entrypoint

import (
	"cmp"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
)

// Telemetry is what an entrypoint reports through: the logger, the metrics registry,
// the tracer provider, the propagator and the error reporter. An entrypoint takes it
// from a WithTelemetry option of its package, and the Host hands every entrypoint
// its own through SetDefaults for the fields the option left nil: its
// logger (with the service and instance fields, at the configured level), the
// registry its /metrics serves, its tracer provider, the propagator that carries
// trace context across processes and its error reporter. A nil field means the Host
// has none to give.
type Telemetry struct {
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
// field of d that its WithTelemetry option left nil and keeps what it was given
// otherwise — an explicit option always wins: given.Or(d) is that merge.
// SetDefaults after Bind does nothing and returns nil. Base implements it.
//
// SetDefaults returns what it could not take, such as a metrics registration that
// clashes with one already in d.Registerer; the Host then refuses the registration
// with a *fault.ConfigError naming the entrypoint, at New or Register.
type DefaultsUser interface {
	SetDefaults(d Telemetry) error
}

// Or returns given with each nil field taken from host: the telemetry an entrypoint
// was given by its own options wins, and the Host's fills in the rest. Every
// DefaultsUser of the module merges this way.
func (given Telemetry) Or(host Telemetry) Telemetry {
	return Telemetry{
		Logger:         cmp.Or(given.Logger, host.Logger),
		Registerer:     cmp.Or(given.Registerer, host.Registerer),
		TracerProvider: cmp.Or(given.TracerProvider, host.TracerProvider),
		Propagator:     cmp.Or(given.Propagator, host.Propagator),
		Reporter:       cmp.Or(given.Reporter, host.Reporter),
	}
}
