package grpcentry_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/fault"
)

// At the limit, an ordinary unary call is shed with RESOURCE_EXHAUSTED and a
// retry pushback, before its handler runs; a critical method, the health service and
// a stream are not shed.
func TestAdmissionShedsOverload(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	ran := 0
	svc := &service{unary: func(ctx context.Context) error {
		ran++
		entered <- struct{}{}
		<-release
		return nil
	}, stream: func(ctx context.Context, send func() error) error { return send() }}
	x := run(t, grpcentry.Config{}, svc,
		grpcentry.WithAdmission(admission.Config{MinLimit: 1, MaxLimit: 1}),
		grpcentry.WithCritical("/grpc.testing.TestService/EmptyCall"))
	held := make(chan error, 1)
	go func() {
		_, err := x.client.UnaryCall(ctxT(t), &testpb.SimpleRequest{})
		held <- err
	}()
	waitFor(t, entered, "the first call's handler")

	var trailer metadata.MD
	_, err := x.client.UnaryCall(ctxT(t), &testpb.SimpleRequest{}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("call beyond the limit: %v, want RESOURCE_EXHAUSTED", err)
	}
	if got := trailer.Get("grpc-retry-pushback-ms"); len(got) != 1 || got[0] != "1000" {
		t.Errorf("grpc-retry-pushback-ms = %v, want [1000]", got)
	}
	if _, err := x.client.EmptyCall(ctxT(t), &testpb.Empty{}); err != nil {
		t.Errorf("critical method at the limit: %v, want answered", err)
	}
	if resp, err := x.health.Check(ctxT(t), &healthpb.HealthCheckRequest{}); err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health at the limit = %v, %v; want SERVING: shedding is not unreadiness", resp, err)
	}
	st, err := x.client.StreamingOutputCall(ctxT(t), &testpb.StreamingOutputCallRequest{})
	if err == nil {
		_, err = st.Recv()
	}
	if err != nil {
		t.Errorf("stream at the limit: %v, want served (streams are exempt)", err)
	}
	close(release)
	if err := waitFor(t, held, "the first call"); err != nil {
		t.Errorf("the admitted call = %v", err)
	}
	if ran != 1 {
		t.Errorf("the handler ran %d times, want 1: a shed call never reaches it", ran)
	}
	if n := x.s.ShedOverload(); n != 1 {
		t.Errorf("ShedOverload = %d, want 1", n)
	}
}

func TestAdmissionConfig(t *testing.T) {
	_, err := grpcentry.New(grpcentry.Config{}, func(*grpc.Server) {},
		grpcentry.WithAdmission(admission.Config{MinLimit: 10, MaxLimit: 5, Window: -1}))
	var ce *fault.ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 2 || ce.Problems[0].Field != "Admission.MinLimit" || ce.Problems[1].Field != "Admission.Window" {
		t.Fatalf("New = %v, want Admission.MinLimit and Admission.Window problems", err)
	}
	s, err := grpcentry.New(grpcentry.Config{}, func(*grpc.Server) {}, grpcentry.WithAdmission(admission.Config{Off: true}))
	if err != nil || s.AdmissionLimit() != 0 {
		t.Fatalf("New(Off) = %v, limit %d; want no limiter", err, s.AdmissionLimit())
	}
}
