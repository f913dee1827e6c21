package host

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
)

// defaults is what the Host hands to each entrypoint that takes it
// (entrypoint.DefaultsUser): its logger, registry, tracer provider (only when
// something receives spans) and propagator, and its error reporter, through which each report also carries the service, the
// instance and the stage, as the Host's own reports do.
func (h *Host) defaults() entrypoint.Telemetry {
	d := entrypoint.Telemetry{Logger: h.log, Registerer: h.tel.reg, Propagator: h.tel.prop}
	if h.tel.receiving {
		d.TracerProvider = h.tel.tp
	}
	if h.tel.reporter != nil {
		d.Reporter = stampedReporter{h}
	}
	return d
}

// stampedReporter is the Host's error reporter as its entrypoints are given it: the
// tags of a report are the entrypoint's, over the service, the instance, the stage
// the Host is in, and the trace and span ids of the span in ctx.
type stampedReporter struct{ h *Host }

func (r stampedReporter) Report(ctx context.Context, err error, tags map[string]string) {
	t := r.h.tel
	all := maps.Clone(t.tags)
	all[fault.TagStage] = r.h.Stage().String()
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		all[fault.TagTraceID] = sc.TraceID().String()
		all[fault.TagSpanID] = sc.SpanID().String()
	}
	maps.Copy(all, tags)
	t.reports.Add(1)
	t.reporter.Report(ctx, err, all)
}

func (r stampedReporter) Flush(ctx context.Context) error { return r.h.tel.reporter.Flush(ctx) }
