package host

import (
	"context"
	"errors"
	"maps"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/fault"
)

// report sends err to the error reporter, when there is one, tagged with the
// service, the instance, stage, the entrypoint when known, and the trace and span
// ids of the span in ctx.
func (t *outputs) report(ctx context.Context, err error, stage Stage, entrypoint string) {
	if t.reporter == nil || err == nil {
		return
	}
	tags := maps.Clone(t.tags)
	tags[fault.TagStage] = stage.String()
	if entrypoint != "" {
		tags[fault.TagEntrypoint] = entrypoint
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tags[fault.TagTraceID] = sc.TraceID().String()
		tags[fault.TagSpanID] = sc.SpanID().String()
	}
	t.reports.Add(1)
	t.reporter.Report(ctx, err, tags)
}

// failed records a failure that ends the service or one entrypoint of it — a
// *StartupError or an *EntrypointError — on the current stage's span and sends it to
// the error reporter. A nil err is ignored.
func (r *run) failed(err error) {
	if err == nil {
		return
	}
	ctx, stage := r.ctx, Stage(r.h.stage.Load())
	if r.span != nil {
		r.span.RecordError(err)
		r.span.SetStatus(codes.Error, err.Error())
		ctx = trace.ContextWithSpan(ctx, r.span)
	}
	var entrypoint string
	if se, ok := errors.AsType[*StartupError](err); ok {
		stage = se.Stage
	}
	if ee, ok := errors.AsType[*EntrypointError](err); ok {
		entrypoint = ee.Entrypoint
	}
	r.h.tel.report(ctx, err, stage, entrypoint)
}
