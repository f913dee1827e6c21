package telemetry

import (
	"context"
	"runtime/debug"
	"strings"

	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/servicewright/servicewright/fault"
)

// ExportFunc builds what sends the Host's telemetry out of the process
// (host.WithExporter).
type ExportFunc = func(ctx context.Context, l *fault.Problems) (spans sdktrace.SpanExporter, metrics sdkmetric.Reader)

// Vars are the OpenTelemetry variables the Host reads from the process environment
// itself; the OpenTelemetry packages read the others (OTEL_RESOURCE_ATTRIBUTES,
// OTEL_SERVICE_NAME, the exporters').
type Vars struct {
	Propagators string // OTEL_PROPAGATORS: "" means W3C tracecontext and baggage
	SDKDisabled string // OTEL_SDK_DISABLED: "true" exports nothing
}

// Env is what the standard OpenTelemetry variables ask for.
type Env struct {
	Resource   *resource.Resource
	Propagator propagation.TextMapPropagator
	Spans      sdktrace.SpanExporter // nil: export nothing
	Metrics    sdkmetric.Reader      // nil: Prometheus only
}

// FromEnv reads the OTEL_* variables through the OpenTelemetry packages that
// implement the specification's environment: the resource detector and autoprop for
// the propagators; export (host/otlp, when main asked for it) builds the exporters. The
// SDK reads the sampler itself. Problems are recorded in l under the variable's name.
func FromEnv(service, instance string, vars Vars, export ExportFunc, l *fault.Problems) Env {
	ctx := context.Background()
	var env Env

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
		l.AddEnvf("", "OTEL_RESOURCE_ATTRIBUTES", "%v", err)
		res = resource.NewSchemaless(attrs...)
	}
	env.Resource = res

	if v := vars.Propagators; v != "" {
		p, err := autoprop.TextMapPropagator(strings.Split(v, ",")...)
		if err != nil {
			l.AddEnvf("", "OTEL_PROPAGATORS", "%v in %q", err, v)
		}
		env.Propagator = p
	} else {
		env.Propagator = autoprop.NewTextMapPropagator()
	}

	if strings.EqualFold(strings.TrimSpace(vars.SDKDisabled), "true") {
		return env
	}
	if export != nil {
		env.Spans, env.Metrics = export(ctx, l)
	}
	return env
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
