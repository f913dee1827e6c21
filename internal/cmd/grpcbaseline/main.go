// Command grpcbaseline is the bare grpc-go process that grpcentry is measured and
// tested against: the orders API (in memory) on GRPC_ADDR, /readyz on PROBE_ADDR
// (always 200), and on SIGTERM a plain grpc.Server.GracefulStop — no readiness
// withdrawal, no drain delay, no gate. make bench compares against it, and the gRPC
// rolling-restart test runs it behind HAProxy to prove the test can fail.
package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	ordersv1 "github.com/servicewright/servicewright/cmd/example/api/orders/v1"
)

type api struct {
	ordersv1.UnimplementedOrdersServiceServer
	mu     sync.Mutex
	orders map[string]*ordersv1.Order
}

func (a *api) CreateOrder(_ context.Context, req *ordersv1.CreateOrderRequest) (*ordersv1.CreateOrderResponse, error) {
	o := req.GetOrder()
	if o.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "id is required")
	}
	a.mu.Lock()
	a.orders[o.GetId()] = o
	a.mu.Unlock()
	return &ordersv1.CreateOrderResponse{Order: o}, nil
}

func (a *api) GetOrder(_ context.Context, req *ordersv1.GetOrderRequest) (*ordersv1.GetOrderResponse, error) {
	a.mu.Lock()
	o, ok := a.orders[req.GetId()]
	a.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no order %q", req.GetId())
	}
	return &ordersv1.GetOrderResponse{Order: o}, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", os.Getenv("GRPC_ADDR"))
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer()
	ordersv1.RegisterOrdersServiceServer(srv, &api{orders: map[string]*ordersv1.Order{}})
	healthpb.RegisterHealthServer(srv, health.NewServer())
	probes := &http.Server{Addr: os.Getenv("PROBE_ADDR"), Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"status":"ok"}`))
	})}
	if probes.Addr != "" {
		go func() { _ = probes.ListenAndServe() }()
	}
	go func() { _ = srv.Serve(ln) }()
	<-ctx.Done()
	_ = probes.Shutdown(context.Background())
	srv.GracefulStop()
}
