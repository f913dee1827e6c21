package entrypoint

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// Defaults is the telemetry a Host hands to the entrypoints registered with it: its
// logger (with the service and instance fields, at the configured level), the
// registry its /metrics serves, and its tracer provider. A nil field means the Host
// has none to give.
type Defaults struct {
	Logger         *zap.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
}

// DefaultsUser is implemented by entrypoints that take the Host's telemetry unless
// they were given their own.
//
// The Host calls SetDefaults once, before Bind. An implementation uses each non-nil
// field of d for which no option was given at construction (WithLogger,
// WithRegisterer, WithTracerProvider) and keeps what it was given otherwise: an
// explicit option always wins. SetDefaults after Bind does nothing.
type DefaultsUser interface {
	SetDefaults(d Defaults)
}
