package host

import (
	"go.opentelemetry.io/otel"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/internal/otlpenv"
)

// otelDiagnostics sends OpenTelemetry's own messages to log, with every value they
// carry withheld (otlpenv.Diagnostics). OpenTelemetry keeps them in process-wide
// state, so the last Host built wins; every Host's logger writes to the same place
// in practice.
func otelDiagnostics(log *zap.Logger) { otlpenv.Diagnostics(log) }

// install makes the Host's tracer provider and propagator OpenTelemetry's global
// ones, for libraries instrumented through the globals. Only Main calls it: the
// globals belong to the process.
func (t *outputs) install() {
	otel.SetTracerProvider(t.tp)
	otel.SetTextMapPropagator(t.prop)
}
