package entrypoint

import (
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
// WithRegisterer, WithTracerProvider, WithPropagator, WithReporter) and keeps what it was given otherwise: an
// explicit option always wins. SetDefaults after Bind does nothing.
type DefaultsUser interface {
	SetDefaults(d Defaults)
}
