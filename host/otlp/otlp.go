// Package otlp exports a Host's spans and metrics as the standard OpenTelemetry
// variables ask. It is opt-in, one line in main, so that a service that exports
// nothing links no OTLP exporter and no gRPC:
//
//	host.Main(spec, otlp.FromEnv())
//
// Spans are exported when OTEL_TRACES_EXPORTER or an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; the
// exporter, its protocol, headers and timeout follow the OpenTelemetry specification,
// read from the process environment by the contrib autoexport package.
// OTEL_METRICS_EXPORTER, when set, adds a reader of the OpenTelemetry instruments
// beside the Host's Prometheus registry. OTEL_SDK_DISABLED=true turns export off (the
// Host checks it before asking). The resource, the propagators and the sampler are
// the Host's own, with or without this package.
package otlp

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/internal/otlpenv"
)

// FromEnv returns the host.Option that exports as the OTEL_* variables ask. A
// malformed variable is a problem of New's *fault.ConfigError, named after the
// variable.
func FromEnv() host.Option { return host.WithExporter(export) }

// export builds the exporters through autoexport. autoexport falls back to OTLP on
// localhost when OTEL_TRACES_EXPORTER is unset, so a span exporter is built only
// when OTEL_TRACES_EXPORTER or an OTLP endpoint is set: a service nobody configured
// exports nothing. Problems are recorded in l under the variable's name; a malformed
// OTLP header list or endpoint (an endpoint with user:password@, say) is one, named
// without its value, and no exporter is built then.
func export(ctx context.Context, l *fault.Problems) (spans sdktrace.SpanExporter, metrics sdkmetric.Reader) {
	// The exporters would log a malformed header list (the token in it) and start
	// without the header: refuse it first, without quoting it, and build none.
	n := l.Len()
	otlpenv.Check(os.LookupEnv, l)
	if l.Len() > n {
		return nil, nil
	}
	if os.Getenv("OTEL_TRACES_EXPORTER") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		exp, err := autoexport.NewSpanExporter(ctx)
		switch {
		case err != nil:
			l.AddEnvf("", exporterVar(err, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "%v", err)
		case !autoexport.IsNoneSpanExporter(exp):
			spans = exp
		}
	}
	if os.Getenv("OTEL_METRICS_EXPORTER") != "" {
		r, err := autoexport.NewMetricReader(ctx)
		switch {
		case err != nil:
			l.AddEnvf("", exporterVar(err, "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"), "%v", err)
		case !autoexport.IsNoneMetricReader(r):
			metrics = r
		}
	}
	return spans, metrics
}

// exporterVar names the variable an autoexport error is about: the protocol
// variable in force for a bad protocol, the exporter variable otherwise.
func exporterVar(err error, exporterVar, protocolVar string) string {
	if !strings.Contains(err.Error(), "protocol") {
		return exporterVar
	}
	if os.Getenv(protocolVar) != "" {
		return protocolVar
	}
	return "OTEL_EXPORTER_OTLP_PROTOCOL"
}
