package grpcentry

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Once the Gate is closed every RPC but the health service's is refused with
// UNAVAILABLE before its handler runs, and counted.
func TestClosedGateRefusesWithUnavailable(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Config{}, func(*grpc.Server) {}, WithRegisterer(reg))
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
	err = s.stream(nil, nil, &grpc.StreamServerInfo{FullMethod: "/a.B/D"}, streamHandler)
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
	s, err := New(Config{}, func(*grpc.Server) {}, WithRegisterer(prometheus.NewRegistry()))
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
