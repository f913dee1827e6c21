package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	ordersv1 "github.com/servicewright/servicewright/cmd/example/api/orders/v1"
)

func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// The orders API over gRPC: create, get, the stream of new orders, the health
// service and reflection; at SIGTERM the health service says NOT_SERVING at once, the
// stream ends UNAVAILABLE, and the process exits 0.
func TestGRPCOrders(t *testing.T) {
	addr := freeAddr(t)
	p, _ := startExample(t, "GRPC_ADDR="+addr, "SW_DRAIN_DELAY=300ms")
	mustLog(t, p, stage("serve"), 20*time.Second)
	conn := dialGRPC(t, addr)
	api, hc := ordersv1.NewOrdersServiceClient(conn), healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	watch, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "orders.v1.OrdersService"})
	if err != nil {
		t.Fatal(err)
	}
	// NOT_SERVING until the first run of the readiness checks, then SERVING.
	for {
		r, err := watch.Recv()
		if err != nil {
			t.Fatalf("health: %v, want SERVING", err)
		}
		if r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}
	stream, err := api.WatchOrders(ctx, &ordersv1.WatchOrdersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.CreateOrder(ctx, &ordersv1.CreateOrderRequest{Order: &ordersv1.Order{Id: "g1"}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("CreateOrder without item: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := api.CreateOrder(ctx, &ordersv1.CreateOrderRequest{Order: &ordersv1.Order{Id: "g1", Item: "tea", Qty: 2}}); err != nil {
		t.Fatalf("CreateOrder: %v", err)
	}
	// The order goes through Kafka into the store; the stream sees it handled.
	got, err := stream.Recv()
	if err != nil || got.GetOrder().GetId() != "g1" {
		t.Fatalf("WatchOrders: %v %v", got, err)
	}
	o, err := api.GetOrder(ctx, &ordersv1.GetOrderRequest{Id: "g1"})
	if err != nil || o.GetOrder().GetItem() != "tea" || o.GetOrder().GetDeliveries() != 1 {
		t.Fatalf("GetOrder: %v %v", o, err)
	}
	if _, err := api.GetOrder(ctx, &ordersv1.GetOrderRequest{Id: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetOrder(nope): %v, want NOT_FOUND", err)
	}
	refl, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := refl.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	lr, err := refl.Recv()
	if err != nil || !strings.Contains(lr.String(), "orders.v1.OrdersService") {
		t.Fatalf("reflection: %v %v", lr, err)
	}
	_ = refl.CloseSend()

	start := time.Now()
	_ = p.Signal(syscall.SIGTERM)
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health after SIGTERM: %v %v, want NOT_SERVING", r, err)
	}
	// A sanity bound (it takes milliseconds): at once, not at the end of the drain delay.
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("NOT_SERVING %s after SIGTERM, want at once (within 2s)", d)
	}
	// Still served through the drain delay.
	if _, err := api.GetOrder(ctx, &ordersv1.GetOrderRequest{Id: "g1"}); err != nil {
		t.Errorf("GetOrder in the drain delay: %v", err)
	}
	for err == nil {
		_, err = stream.Recv()
	}
	if s := status.Convert(err); s.Code() != codes.Unavailable || !strings.Contains(s.Message(), "draining") {
		t.Errorf("WatchOrders ended with %v, want UNAVAILABLE from the drain", err)
	}
	if code := exitCode(t, p); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
