package grpcentry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/internal/transport"
)

// The server span of an RPC is started and ended by the Server's interceptors rather
// than by otelgrpc's stats handler. Profiled (docs/cost.md), otelgrpc cost some 35
// allocations per call even when the call was not sampled: a full copy of the
// incoming metadata to read the trace context, the span's attribute and option
// slices built per call, two context values, and grpc-go's stats events, which exist
// only because a stats handler is installed. The span below reads the propagation
// headers from the metadata without copying it, builds its start options once, and
// sets its attributes in one call at the end, on a span that records only.
//
// The attributes are those otelgrpc sets by default, from the OpenTelemetry RPC
// conventions (semconv 1.43): rpc.system.name, rpc.method ("package.Service/Method")
// and rpc.response.status_code (the code's name, "OK", "UNAVAILABLE"), so that
// queries written against otelgrpc's spans keep working.

// tracerName is the instrumentation scope of the Server's spans.
const tracerName = "github.com/servicewright/servicewright/entrypoint/grpcentry"

// Span attribute keys, from the OpenTelemetry RPC semantic conventions.
const (
	attrSystem = attribute.Key("rpc.system.name")
	attrMethod = attribute.Key("rpc.method")
	attrCode   = attribute.Key("rpc.response.status_code")
)

var systemGRPC = attrSystem.String("grpc")

// tracing is the Server's tracer and propagator (transport.NewTracing); the zero
// value traces nothing.
type tracing struct{ transport.Tracing }

// newTracing traces with tp and prop (W3C trace context and baggage when nil). A nil
// or no-op tp traces nothing: no span, no propagation, no cost.
func newTracing(tp trace.TracerProvider, prop propagation.TextMapPropagator) tracing {
	return tracing{transport.NewTracing(tp, prop, tracerName)}
}

// start continues the trace of ctx's incoming metadata in a server span named after
// the full method without its leading slash ("package.Service/Method"), and returns
// the ctx carrying the span. The attributes are all set by endSpan, and only on a span
// that records: an unsampled call pays for the propagation and the span's context.
func (t *tracing) start(ctx context.Context, method string) (context.Context, trace.Span) {
	ctx = t.Prop.Extract(ctx, incomingCarrier{ctx})
	return t.Tracer.Start(ctx, spanName(method), t.Opts...)
}

// endSpan records what the call came to and ends span: the method, the status code
// of err, and an error status for the codes that say the server failed (those
// otelgrpc marks: UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE,
// DATA_LOSS) or for a panic, recovered as r (not nil), of which the span tells the
// type only: its text may carry whatever the handler held.
func endSpan(span trace.Span, method string, err error, r any) {
	if !span.IsRecording() {
		span.End()
		return
	}
	code := status.Code(err)
	span.SetAttributes(systemGRPC, attrMethod.String(spanName(method)), attrCode.String(codeName(code)))
	switch {
	case r != nil:
		transport.SpanPanicked(span, r)
	case serverFault(code):
		span.SetStatus(otelcodes.Error, status.Convert(err).Message())
	}
	span.End()
}

// serverFault tells the codes that mark a server span as failed.
func serverFault(c codes.Code) bool {
	switch c {
	case codes.Unknown, codes.DeadlineExceeded, codes.Unimplemented, codes.Internal, codes.Unavailable, codes.DataLoss:
		return true
	}
	return false
}

// spanName is the full method without its leading slash: "package.Service/Method".
func spanName(method string) string {
	if len(method) > 1 && method[0] == '/' {
		return method[1:]
	}
	return method
}

// incomingCarrier reads the propagation headers from the incoming metadata of its
// ctx one key at a time: metadata.FromIncomingContext copies the whole metadata
// (a map and a slice per key) on every call. Set does nothing: the incoming metadata
// is not written.
type incomingCarrier struct{ ctx context.Context }

func (c incomingCarrier) Get(key string) string {
	if v := metadata.ValueFromIncomingContext(c.ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c incomingCarrier) Set(string, string) {}

func (c incomingCarrier) Keys() []string {
	md, _ := metadata.FromIncomingContext(c.ctx)
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	return keys
}
