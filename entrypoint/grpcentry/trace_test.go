package grpcentry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
)

// The caller's trace: a remote parent, sampled or not.
const (
	parentTrace = "0af7651916cd43dd8448eb211c80319c"
	parentSpan  = "b7ad6b7169203331"
)

// withParent is ctx sending a W3C traceparent, sampled or not.
func withParent(ctx context.Context, sampled bool) context.Context {
	flags := "00"
	if sampled {
		flags = "01"
	}
	return metadata.AppendToOutgoingContext(ctx, "traceparent", "00-"+parentTrace+"-"+parentSpan+"-"+flags)
}

// attrs is a span's attributes by key, as strings.
func attrs(kv []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, a := range kv {
		m[string(a.Key)] = a.Value.String()
	}
	return m
}

// secretPanic is a panic value whose text must not reach a span.
type secretPanic struct{ password string }

func (p secretPanic) String() string { return "password=" + p.password }

// TestSpans checks the server span of an RPC over a real server on loopback: a
// ParentBased(AlwaysSample) provider records a span for every call, continuing the
// caller's trace, and none for a caller that did not sample its own.
func TestSpans(t *testing.T) {
	newTP := func(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
		t.Cleanup(func() { tp.Shutdown(context.Background()) })
		return rec, tp
	}
	// one is the only span ended; the interceptor ends it before the answer leaves.
	one := func(t *testing.T, rec *tracetest.SpanRecorder) sdktrace.ReadOnlySpan {
		t.Helper()
		spans := rec.Ended()
		if len(spans) != 1 {
			t.Fatalf("%d spans ended, want 1", len(spans))
		}
		return spans[0]
	}

	// callSeeing makes one unary call under a caller's trace, sampled or not, and
	// returns the spans recorded and the span context the handler saw.
	callSeeing := func(t *testing.T, sampled bool) (*tracetest.SpanRecorder, trace.SpanContext) {
		rec, tp := newTP(t)
		var seen trace.SpanContext
		x := run(t, grpcentry.Config{}, &service{unary: func(ctx context.Context) error {
			seen = trace.SpanContextFromContext(ctx)
			return nil
		}}, grpcentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
		if _, err := x.client.UnaryCall(withParent(ctxT(t), sampled), &testpb.SimpleRequest{}); err != nil {
			t.Fatal(err)
		}
		return rec, seen
	}

	t.Run("a unary call continues the caller's trace in a server span", func(t *testing.T) {
		rec, seen := callSeeing(t, true)
		span := one(t, rec)
		if span.Name() != "grpc.testing.TestService/UnaryCall" || span.SpanKind() != trace.SpanKindServer {
			t.Errorf("span %q of kind %v, want grpc.testing.TestService/UnaryCall, server", span.Name(), span.SpanKind())
		}
		if p := span.Parent(); p.TraceID().String() != parentTrace || p.SpanID().String() != parentSpan || !p.IsRemote() {
			t.Errorf("parent %v, want the caller's remote span %s/%s", p, parentTrace, parentSpan)
		}
		if !seen.Equal(span.SpanContext()) {
			t.Errorf("the handler's ctx carries %v, want the server span %v", seen, span.SpanContext())
		}
		want := map[string]string{"rpc.system.name": "grpc", "rpc.method": "grpc.testing.TestService/UnaryCall",
			"rpc.response.status_code": "OK"}
		if got := attrs(span.Attributes()); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("attributes %v, want %v", got, want)
		}
		if span.Status().Code != otelcodes.Unset {
			t.Errorf("status %v, want unset", span.Status())
		}
	})

	t.Run("the codes of a server fault set an error status, the others do not", func(t *testing.T) {
		for _, c := range []struct {
			code  codes.Code
			name  string
			fault bool
		}{
			{codes.InvalidArgument, "INVALID_ARGUMENT", false},
			{codes.NotFound, "NOT_FOUND", false},
			{codes.PermissionDenied, "PERMISSION_DENIED", false},
			{codes.ResourceExhausted, "RESOURCE_EXHAUSTED", false},
			{codes.Canceled, "CANCELLED", false},
			{codes.Unknown, "UNKNOWN", true},
			{codes.DeadlineExceeded, "DEADLINE_EXCEEDED", true},
			{codes.Unimplemented, "UNIMPLEMENTED", true},
			{codes.Internal, "INTERNAL", true},
			{codes.Unavailable, "UNAVAILABLE", true},
			{codes.DataLoss, "DATA_LOSS", true},
		} {
			rec, tp := newTP(t)
			x := run(t, grpcentry.Config{}, &service{unary: func(context.Context) error {
				return status.Error(c.code, "what went wrong")
			}}, grpcentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
			if _, err := x.client.UnaryCall(ctxT(t), &testpb.SimpleRequest{}); status.Code(err) != c.code {
				t.Fatalf("%v: RPC = %v", c.code, err)
			}
			span := one(t, rec)
			if got := attrs(span.Attributes())["rpc.response.status_code"]; got != c.name {
				t.Errorf("%v: rpc.response.status_code %q, want %q", c.code, got, c.name)
			}
			want := sdktrace.Status{Code: otelcodes.Unset}
			if c.fault {
				want = sdktrace.Status{Code: otelcodes.Error, Description: "what went wrong"}
			}
			if span.Status() != want {
				t.Errorf("%v: status %v, want %v", c.code, span.Status(), want)
			}
		}
	})

	t.Run("a panic's span says INTERNAL, error, and the panic's type only", func(t *testing.T) {
		rec, tp := newTP(t)
		x := run(t, grpcentry.Config{}, &service{unary: func(context.Context) error {
			panic(secretPanic{password: "hunter2"})
		}}, grpcentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
		if _, err := x.client.UnaryCall(ctxT(t), &testpb.SimpleRequest{}); status.Code(err) != codes.Internal {
			t.Fatalf("RPC = %v, want INTERNAL", err)
		}
		span := one(t, rec)
		if got := attrs(span.Attributes())["rpc.response.status_code"]; got != "INTERNAL" {
			t.Errorf("rpc.response.status_code %q, want INTERNAL", got)
		}
		if span.Status().Code != otelcodes.Error {
			t.Errorf("status %v, want error", span.Status())
		}
		events := span.Events()
		if len(events) != 1 || events[0].Name != "exception" ||
			attrs(events[0].Attributes)["exception.type"] != "grpcentry_test.secretPanic" || len(events[0].Attributes) != 1 {
			t.Errorf("events %v, want one exception with its type only", events)
		}
		if all := fmt.Sprint(span.Status(), span.Attributes(), events); strings.Contains(all, "hunter2") {
			t.Errorf("the panic's text reached the span: %s", all)
		}
	})

	t.Run("a stream continues the caller's trace in a server span", func(t *testing.T) {
		rec, tp := newTP(t)
		var seen trace.SpanContext
		x := run(t, grpcentry.Config{}, &service{stream: func(ctx context.Context, send func() error) error {
			seen = trace.SpanContextFromContext(ctx)
			return send()
		}}, grpcentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
		st, err := x.client.StreamingOutputCall(withParent(ctxT(t), true), &testpb.StreamingOutputCallRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err == nil {
			t.Fatal("the stream did not end")
		}
		span := one(t, rec)
		if span.Name() != "grpc.testing.TestService/StreamingOutputCall" || span.SpanKind() != trace.SpanKindServer ||
			span.Parent().TraceID().String() != parentTrace || !seen.Equal(span.SpanContext()) {
			t.Errorf("span %q, kind %v, parent %v, handler's %v; want the stream's server span under the caller's",
				span.Name(), span.SpanKind(), span.Parent(), seen)
		}
		if got := attrs(span.Attributes())["rpc.response.status_code"]; got != "OK" {
			t.Errorf("rpc.response.status_code %q, want OK", got)
		}
	})

	t.Run("a call the caller did not sample records nothing but carries the trace on", func(t *testing.T) {
		rec, seen := callSeeing(t, false)
		if n := len(rec.Started()); n != 0 {
			t.Errorf("%d spans started, want none", n)
		}
		if seen.TraceID().String() != parentTrace || seen.IsSampled() {
			t.Errorf("the handler's span context %v, want the caller's trace, unsampled", seen)
		}
	})

	t.Run("the health service is not traced", func(t *testing.T) {
		rec, tp := newTP(t)
		x := run(t, grpcentry.Config{}, &service{}, grpcentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
		if _, err := x.health.Check(withParent(ctxT(t), true), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
		if n := len(rec.Started()); n != 0 {
			t.Errorf("%d spans started, want none", n)
		}
	})

	t.Run("a no-op provider makes no span and extracts nothing", func(t *testing.T) {
		var seen trace.SpanContext
		x := run(t, grpcentry.Config{}, &service{unary: func(ctx context.Context) error {
			seen = trace.SpanContextFromContext(ctx)
			return nil
		}}, grpcentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: noop.NewTracerProvider()}))
		if _, err := x.client.UnaryCall(withParent(ctxT(t), true), &testpb.SimpleRequest{}); err != nil {
			t.Fatal(err)
		}
		if seen.IsValid() {
			t.Errorf("the handler's span context is %v, want none", seen)
		}
	})
}
