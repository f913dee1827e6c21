package transport

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

func TestNewTracing(t *testing.T) {
	for name, tp := range map[string]trace.TracerProvider{"nil": nil, "noop": tracenoop.NewTracerProvider(), "noop pointer": new(tracenoop.TracerProvider)} {
		if tr := NewTracing(tp, nil, "scope"); tr.Tracer != nil || tr.Prop != nil {
			t.Errorf("%s provider: %+v, want the zero Tracing", name, tr)
		}
	}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	tr := NewTracing(tp, nil, "scope")
	if tr.Tracer == nil || len(tr.Opts) != 1 {
		t.Fatalf("SDK provider: %+v, want a tracer and the server-kind option", tr)
	}
	if f := tr.Prop.Fields(); len(f) != 3 { // traceparent, tracestate, baggage
		t.Errorf("default propagator fields %v, want W3C trace context and baggage", f)
	}
	given := propagation.TraceContext{}
	if got := NewTracing(tp, given, "scope").Prop; got != given {
		t.Errorf("propagator %v, want the one given", got)
	}
}

func TestSpanPanicked(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	_, span := tp.Tracer("t").Start(context.Background(), "s")
	SpanPanicked(span, errors.New("password=hunter2"))
	span.End()
	s := rec.Ended()[0]
	if s.Status().Code != codes.Error || len(s.Events()) != 1 || s.Events()[0].Name != "exception" {
		t.Fatalf("status %v, events %v; want an error and one exception event", s.Status(), s.Events())
	}
	attrs := s.Events()[0].Attributes
	if len(attrs) != 1 || attrs[0].Value.AsString() != "*errors.errorString" {
		t.Errorf("exception attributes %v, want the value's type only", attrs)
	}
}
