package transport

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Tracing is a server entrypoint's tracer, propagator and span start options, made
// once; the zero value traces nothing. httpentry and grpcentry start their server
// spans with it, each reading the trace context from its own carrier.
type Tracing struct {
	Tracer trace.Tracer // nil: no span
	Prop   propagation.TextMapPropagator
	Opts   []trace.SpanStartOption // made once: a variadic list built per unit allocates
}

// NewTracing traces server spans of the instrumentation scope with tp, continuing
// the trace context prop extracts (W3C trace context and baggage when prop is nil).
// A nil or no-op tp traces nothing: no span, no propagation, no cost.
func NewTracing(tp trace.TracerProvider, prop propagation.TextMapPropagator, scope string) Tracing {
	switch tp.(type) {
	case nil, tracenoop.TracerProvider, *tracenoop.TracerProvider:
		return Tracing{}
	}
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return Tracing{Tracer: tp.Tracer(scope), Prop: prop,
		Opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}}
}

// SpanPanicked marks span failed by a handler that panicked with v: an error status
// and an "exception" event carrying the value's type only — its text may carry
// whatever the handler held.
func SpanPanicked(span trace.Span, v any) {
	span.SetStatus(codes.Error, "handler panicked")
	span.AddEvent("exception", trace.WithAttributes(attribute.String("exception.type", fmt.Sprintf("%T", v))))
}
