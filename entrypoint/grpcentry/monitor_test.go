package grpcentry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// Registered with a Host and no WithHealth, the health service follows the Host's
// own readiness: NOT_SERVING the moment Host.BeginDraining is called (not one instant
// of virtual time later), while RPCs are still served, over an in-memory connection.
func TestHostMonitorWithoutWithHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := hosttest.NewNetwork()
		s, err := grpcentry.New(grpcentry.Config{Name: "grpc"},
			func(g *grpc.Server) { testpb.RegisterTestServiceServer(g, &service{}) }, grpcentry.WithListener(n.Listener()))
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

		conn := dialNetwork(t, n)
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
		if d := time.Since(start); d != 0 {
			t.Errorf("NOT_SERVING %s of virtual time after BeginDraining, want at once", d)
		}
		if _, err := x.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
			t.Errorf("an RPC after BeginDraining, before the stop: %v", err)
		}
	})
}
