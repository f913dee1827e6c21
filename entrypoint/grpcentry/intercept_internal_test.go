package grpcentry

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint"
)

// Once the Gate is closed every RPC but the health service's is refused with
// UNAVAILABLE before its handler runs, and counted.
func TestClosedGateRefusesWithUnavailable(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Config{}, func(*grpc.Server) {}, WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	unaryHandler := func(context.Context, any) (any, error) { ran++; return "ok", nil }
	streamHandler := func(any, grpc.ServerStream) error { ran++; return nil }

	if _, err := s.unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/a.B/C"}, unaryHandler); err != nil {
		t.Fatalf("open gate: %v", err)
	}
	s.gate.Close()
	_, err = s.unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/a.B/C"}, unaryHandler)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("unary after the gate: %v, want UNAVAILABLE", err)
	}
	err = s.stream(nil, bareStream{}, &grpc.StreamServerInfo{FullMethod: "/a.B/D"}, streamHandler)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("stream after the gate: %v, want UNAVAILABLE", err)
	}
	if _, err := s.unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: healthPrefix + "Check"}, unaryHandler); err != nil {
		t.Fatalf("health Check after the gate: %v, want answered", err)
	}
	if ran != 2 {
		t.Errorf("handlers ran %d times, want 2 (before the gate, and the health check)", ran)
	}
	if n := s.Stats().RefusedDraining; n != 2 {
		t.Errorf("RefusedDraining = %d, want 2", n)
	}
	if v := testutil.ToFloat64(s.metrics.refused); v != 2 {
		t.Errorf("servicewright_grpc_refused_draining_total = %v, want 2", v)
	}
	if v := testutil.ToFloat64(s.metrics.requests.WithLabelValues("/a.B/C", "OK")); v != 1 {
		t.Errorf("requests_total{/a.B/C,OK} = %v, want 1", v)
	}
}

// A drained stream's handler result becomes UNAVAILABLE unless it is a status of its
// own.
func TestDrainedStatus(t *testing.T) {
	for _, c := range []struct {
		in   error
		want codes.Code
	}{
		{nil, codes.Unavailable},
		{context.Canceled, codes.Unavailable},
		{status.Error(codes.Canceled, "x"), codes.Unavailable},
		{status.Error(codes.FailedPrecondition, "mine"), codes.FailedPrecondition},
	} {
		if got := status.Code(drainedStatus(c.in)); got != c.want {
			t.Errorf("drainedStatus(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// The unary interceptor, with admission and metrics on, allocates nothing per call
// once the method's series exist (docs/cost.md): a change that adds an allocation to
// the call path fails here.
func TestUnaryAllocs(t *testing.T) {
	s, err := New(Config{}, func(*grpc.Server) {}, WithTelemetry(entrypoint.Telemetry{Registerer: prometheus.NewRegistry()}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info := &grpc.UnaryServerInfo{FullMethod: "/a.B/C"}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	if _, err := s.unary(ctx, nil, info, handler); err != nil { // the series are made on first use
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { _, _ = s.unary(ctx, nil, info, handler) }); n != 0 {
		t.Errorf("unary interceptor allocates %v per call, want 0", n)
	}
}

// A traced call that is not sampled costs few allocations (docs/cost.md): the
// carrier over the incoming metadata, the traceparent value read from it, the
// remote parent and the span in the ctx, and the SDK's non-recording span. otelgrpc
// cost some 35 for the same call.
func TestUnaryAllocsUnsampled(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0))))
	defer tp.Shutdown(context.Background())
	s, err := New(Config{}, func(*grpc.Server) {}, WithTelemetry(entrypoint.Telemetry{Registerer: prometheus.NewRegistry(), TracerProvider: tp}))
	if err != nil {
		t.Fatal(err)
	}
	info := &grpc.UnaryServerInfo{FullMethod: "/a.B/C"}
	var sc trace.SpanContext
	handler := func(ctx context.Context, _ any) (any, error) { sc = trace.SpanContextFromContext(ctx); return nil, nil }
	md := metadata.MD{":authority": {"localhost"}, "content-type": {"application/grpc"}, "user-agent": {"grpc-go"}}
	for _, c := range []struct {
		name   string
		md     metadata.MD
		allocs float64
	}{
		{"root", md, 3},
		{"unsampled parent", metadata.Join(md, metadata.Pairs("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")), 6},
	} {
		ctx := metadata.NewIncomingContext(context.Background(), c.md)
		if _, err := s.unary(ctx, nil, info, handler); err != nil {
			t.Fatal(err)
		}
		if !sc.IsValid() || sc.IsSampled() {
			t.Fatalf("%s: the handler's span context is %v, want a valid unsampled one", c.name, sc)
		}
		n := testing.AllocsPerRun(1000, func() { _, _ = s.unary(ctx, nil, info, handler) })
		t.Logf("%s: %v allocations per call", c.name, n)
		if n > c.allocs {
			t.Errorf("%s: an unsampled traced call allocates %v, want at most %v", c.name, n, c.allocs)
		}
	}
}

// bareStream is a grpc.ServerStream with only a Context, for a call refused before
// its handler runs.
type bareStream struct{ grpc.ServerStream }

func (bareStream) Context() context.Context { return context.Background() }
