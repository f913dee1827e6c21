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
	"cmp"
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
)

// FromEnv returns the host.Option that exports as the OTEL_* variables ask. A
// malformed variable is a problem of New's *fault.ConfigError, named after the
// variable.
func FromEnv() host.Option { return host.WithExporter(env{}) }

type env struct{}

// Export builds the exporters through autoexport. autoexport falls back to OTLP on
// localhost when OTEL_TRACES_EXPORTER is unset, so a span exporter is built only
// when OTEL_TRACES_EXPORTER or an OTLP endpoint is set: a service nobody configured
// exports nothing. Problems are recorded in l under the variable's name.
func (env) Export(ctx context.Context, l *fault.Problems) host.Exports {
	var x host.Exports
	if os.Getenv("OTEL_TRACES_EXPORTER") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		exp, err := autoexport.NewSpanExporter(ctx)
		switch {
		case err != nil:
			l.Addf(exporterField(err, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "%v", err)
		case !autoexport.IsNoneSpanExporter(exp):
			x.Spans = exp
			x.SpansName = cmp.Or(os.Getenv("OTEL_TRACES_EXPORTER"), "otlp")
		}
	}
	if os.Getenv("OTEL_METRICS_EXPORTER") != "" {
		r, err := autoexport.NewMetricReader(ctx)
		switch {
		case err != nil:
			l.Addf(exporterField(err, "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"), "%v", err)
		case !autoexport.IsNoneMetricReader(r):
			x.Metrics = r
		}
	}
	return x
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
