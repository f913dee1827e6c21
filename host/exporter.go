package host

import (
	"context"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/servicewright/servicewright/fault"
)

// Exporter builds what sends the Host's telemetry out of the process. Package
// host/otlp implements it from the standard OTEL_* variables; without one, spans go
// only to TelemetryConfig.SpanProcessors and metrics only to the Prometheus registry,
// and the binary links no exporter.
type Exporter interface {
	// Export is called once, in New, unless OTEL_SDK_DISABLED is true. It records
	// each problem in l under the name of the variable it came from (New then fails
	// with a *fault.ConfigError) and returns what it built.
	Export(ctx context.Context, l *fault.Problems) Exports
}

// Exports is what an Exporter built; a nil field exports nothing.
type Exports struct {
	Spans     sdktrace.SpanExporter // batched behind the SpanProcessors
	SpansName string                // names the exporter in the "exporting spans" line
	Metrics   sdkmetric.Reader      // reads the OpenTelemetry instruments beside the Prometheus registry
}

// WithExporter makes the Host export through e (see Exporter); otlp.FromEnv is the
// usual one.
func WithExporter(e Exporter) Option {
	return func(o *options) { o.exporter = e }
}
