package cronentry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/servicewright/servicewright/fault"
)

// Tag keys of a run's report, beside fault.TagEntrypoint and fault.TagTraceID.
const (
	tagJob       = "job"       // the job's name
	tagScheduled = "scheduled" // the tick's nominal time, RFC 3339 in UTC
	tagOutcome   = "outcome"   // "failed" or "panicked"
)

// tracerName names the Scheduler's tracer.
const tracerName = "github.com/servicewright/servicewright/entrypoint/cronentry"

// useTracerProvider makes each run a span of tp; a nil or no-op tp makes none.
func (s *Scheduler) useTracerProvider(tp trace.TracerProvider) {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return
	}
	s.tracer = tp.Tracer(tracerName)
}

// startSpan starts the span of run t, when the Scheduler traces: "cron.run", with
// the job, the scheduled time and the fencing token.
func (s *Scheduler) startSpan(ctx context.Context, t Tick) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	return s.tracer.Start(ctx, "cron.run", trace.WithAttributes(
		attribute.String("cron.job", t.Job),
		attribute.String("cron.scheduled", t.Scheduled.UTC().Format(time.RFC3339Nano)),
		attribute.Int("cron.missed", t.Missed),
		attribute.Int64("cron.token", int64(t.Token)),
		attribute.String("entrypoint", s.base.Name()),
	))
}

// endSpan ends span, if any, with the run's outcome, and its error for a failure.
func endSpan(span trace.Span, o outcome, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String("cron.outcome", o.String()))
	if o == failed || o == panicked {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// report sends a failed or panicked run to the error reporter, if any, tagged with
// the entrypoint, the job, the tick and the trace id of the run's span (ctx).
func (s *Scheduler) report(ctx context.Context, t Tick, o outcome, err error) {
	if s.reporter == nil || (o != failed && o != panicked) {
		return
	}
	tags := map[string]string{
		fault.TagEntrypoint: s.base.Name(),
		tagJob:              t.Job,
		tagScheduled:        t.Scheduled.UTC().Format(time.RFC3339Nano),
		tagOutcome:          o.String(),
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tags[fault.TagTraceID] = sc.TraceID().String()
		tags[fault.TagSpanID] = sc.SpanID().String()
	}
	s.reporter.Report(ctx, err, tags)
}
