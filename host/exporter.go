package host

import (
	"context"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/telemetry"
)

// exportFunc builds what sends the Host's telemetry out of the process (see
// WithExporter).
type exportFunc = telemetry.ExportFunc

// WithExporter makes the Host export its telemetry through what export builds;
// otlp.FromEnv, from the standard OTEL_* variables, is the usual one. Without it,
// spans go only to TelemetryConfig.SpanProcessors and metrics only to the Prometheus
// registry, and the binary links no exporter.
//
// New calls export once, unless OTEL_SDK_DISABLED is true. It records each problem in
// l under the name of the variable it came from (New then fails with a
// *fault.ConfigError) and returns a span exporter, batched behind the SpanProcessors,
// and a reader of the OpenTelemetry instruments beside the Prometheus registry;
// either may be nil, exporting nothing.
func WithExporter(export func(ctx context.Context, l *fault.Problems) (spans sdktrace.SpanExporter, metrics sdkmetric.Reader)) Option {
	return func(o *options) { o.exporter = export }
}
