package grpcentry_test

import (
	"context"
	"fmt"
	"log"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	ordersv1 "github.com/servicewright/servicewright/cmd/example/api/orders/v1"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
)

// The README's gRPC service: the orders API with the health service tied to the
// readiness the Host withdraws at SIGTERM.
func Example_service() {
	var (
		readiness health.Source // the Host's readiness (see the README)
		checks    map[string]health.Check
		orders    ordersv1.OrdersServiceServer
	)
	monitor, err := health.NewMonitor(health.MonitorConfig{Checks: checks}, readiness)
	if err != nil {
		log.Fatal(err)
	}
	api, err := grpcentry.New(grpcentry.Config{Addr: ":9090"}, func(g *grpc.Server) {
		ordersv1.RegisterOrdersServiceServer(g, orders)
		reflection.Register(g)
	}, grpcentry.WithHealth(monitor))
	if err != nil {
		log.Fatal(err) // a *fault.ConfigError naming each bad field
	}
	host.Main(host.AppSpec{ServiceName: "orders", Entrypoints: []host.Registration{{Entrypoint: api}}})
}

// A Server driven through the entrypoint sequence, as the Host drives it: the health
// service follows readiness, and Drain ends with nothing in flight.
func Example() {
	var ready health.State
	ready.Set(health.StatusReady)
	monitor, err := health.NewMonitor(health.MonitorConfig{}, &ready)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := grpcentry.New(grpcentry.Config{Addr: "127.0.0.1:0"}, func(*grpc.Server) {}, grpcentry.WithHealth(monitor))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := srv.Bind(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	stop := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), stop) }()

	conn, err := grpc.NewClient(srv.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	watch, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, _ := watch.Recv()
	fmt.Println("ready:", r.GetStatus())

	ready.Set(health.StatusDraining) // the Host withdraws readiness at SIGTERM
	r, _ = watch.Recv()
	fmt.Println("announced:", r.GetStatus())

	close(stop)
	fmt.Println("serve:", <-served)
	fmt.Println("drain:", srv.Drain(context.Background()))
	_, err = watch.Recv()
	fmt.Println("watch:", err)
	fmt.Println("stop:", srv.Stop(context.Background()))
	// Output:
	// ready: SERVING
	// announced: NOT_SERVING
	// serve: <nil>
	// drain: <nil>
	// watch: rpc error: code = Unavailable desc = grpc server is draining: not serving
	// stop: <nil>
}
