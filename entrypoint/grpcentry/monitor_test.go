package grpcentry_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
)

// Registered with a Host and no WithHealth, the health service follows the Host's
// own readiness: NOT_SERVING within 50 ms of Host.BeginDraining, while RPCs are still
// served, over a real loopback connection.
func TestHostMonitorWithoutWithHealth(t *testing.T) {
	s, err := grpcentry.New(grpcentry.Config{Name: "grpc", Addr: "127.0.0.1:0"},
		func(g *grpc.Server) { testpb.RegisterTestServiceServer(g, &service{}) })
	if err != nil {
		t.Fatal(err)
	}
	inServe := make(chan struct{})
	h, err := host.New(host.AppSpec{
		ServiceName: "orders",
		Telemetry:   host.TelemetryConfig{Logger: zap.NewNop()},
		Probes:      health.ListenerConfig{Disabled: true},
		Budgets:     host.Budgets{DrainGrace: time.Second, StepTimeout: time.Second},
		Entrypoints: []host.Registration{{Entrypoint: s}},
	}, host.WithObserver(func(e host.Event) {
		if e.Stage == host.StageServe {
			close(inServe)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- h.Run(context.Background()) }()
	defer func() {
		h.Shutdown().Begin()
		if err := waitFor(t, ran, "Run after the stop"); err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	waitFor(t, inServe, "the serve stage")

	conn, err := grpc.NewClient(s.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	x := &running{t: t, s: s, conn: conn, client: testpb.NewTestServiceClient(conn), health: healthpb.NewHealthClient(conn)}
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	got, _ := x.watch(ctx)
	serving(t, got)

	start := time.Now()
	h.BeginDraining()
	if st := waitFor(t, got, "answer after BeginDraining"); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("answer %v, want NOT_SERVING", st)
	}
	d := time.Since(start)
	t.Logf("NOT_SERVING %s after BeginDraining", d)
	if d > 50*time.Millisecond {
		t.Errorf("NOT_SERVING %s after BeginDraining, want within 50ms", d)
	}
	if _, err := x.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Errorf("an RPC after BeginDraining, before the stop: %v", err)
	}
}
