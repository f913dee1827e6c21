package host

import (
	"cmp"
	"context"
	"os"
	"runtime/debug"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/otlpenv"
)

// otelEnv is what the standard OpenTelemetry variables ask for.
type otelEnv struct {
	resource   *resource.Resource
	propagator propagation.TextMapPropagator
	spans      sdktrace.SpanExporter // nil: export nothing
	spansName  string
	metrics    sdkmetric.Reader // nil: Prometheus only
}

// fromEnv reads the OTEL_* variables through the OpenTelemetry packages that
// implement the specification's environment: the resource detector, autoprop for the
// propagators and autoexport for the exporters. The SDK reads the sampler itself.
//
// autoexport falls back to OTLP on localhost when OTEL_TRACES_EXPORTER is unset, so
// an exporter is built only when OTEL_TRACES_EXPORTER or an OTLP endpoint is set:
// a service nobody configured exports nothing. Problems are recorded in l under the
// variable's name; a malformed OTLP header list or endpoint (otlpenv.Check) is one,
// and no exporter is built then.
func fromEnv(service, instance string, l *fault.Problems) otelEnv {
	ctx := context.Background()
	var env otelEnv

	attrs := []attribute.KeyValue{
		attribute.String("service.name", service),
		attribute.String("service.instance.id", instance),
	}
	if v := buildVersion(); v != "" {
		attrs = append(attrs, attribute.String("service.version", v))
	}
	// Later detectors win: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME override
	// what the spec says.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		l.Addf("OTEL_RESOURCE_ATTRIBUTES", "%v", err)
		res = resource.NewSchemaless(attrs...)
	}
	env.resource = res

	if v := os.Getenv("OTEL_PROPAGATORS"); v != "" {
		p, err := autoprop.TextMapPropagator(strings.Split(v, ",")...)
		if err != nil {
			l.Addf("OTEL_PROPAGATORS", "%v in %q", err, v)
		}
		env.propagator = p
	} else {
		env.propagator = autoprop.NewTextMapPropagator()
	}

	if disabled := os.Getenv("OTEL_SDK_DISABLED"); strings.EqualFold(strings.TrimSpace(disabled), "true") {
		return env
	}
	// The exporters would log a malformed header list (the token in it) and start
	// without the header: refuse it first, without quoting it, and build none.
	n := l.Len()
	otlpenv.Check(os.LookupEnv, l)
	if l.Len() > n {
		return env
	}
	if os.Getenv("OTEL_TRACES_EXPORTER") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		exp, err := autoexport.NewSpanExporter(ctx)
		switch {
		case err != nil:
			l.Addf(exporterField(err, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "%v", err)
		case !autoexport.IsNoneSpanExporter(exp):
			env.spans = exp
			env.spansName = cmp.Or(os.Getenv("OTEL_TRACES_EXPORTER"), "otlp")
		}
	}
	if os.Getenv("OTEL_METRICS_EXPORTER") != "" {
		r, err := autoexport.NewMetricReader(ctx)
		switch {
		case err != nil:
			l.Addf(exporterField(err, "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"), "%v", err)
		case !autoexport.IsNoneMetricReader(r):
			env.metrics = r
		}
	}
	return env
}

// exporterField names the variable an autoexport error is about: the protocol
// variable in force for a bad protocol, the exporter variable otherwise.
func exporterField(err error, exporterVar, protocolVar string) string {
	if !strings.Contains(err.Error(), "protocol") {
		return exporterVar
	}
	if os.Getenv(protocolVar) != "" {
		return protocolVar
	}
	return "OTEL_EXPORTER_OTLP_PROTOCOL"
}

// buildVersion is the main module's version from the build information, or "" when
// the binary does not know it (a development build).
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return ""
	}
	return bi.Main.Version
}
