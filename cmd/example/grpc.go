package main

import (
	"context"
	"sync"

	"go.uber.org/fx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	ordersv1 "github.com/servicewright/servicewright/cmd/example/api/orders/v1"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

// grpcModule serves the orders API on addr through the gRPC entrypoint, with the
// health service tied to readiness and server reflection (grpcurl works without the
// .proto).
func grpcModule(addr string) fx.Option {
	return fx.Options(
		fx.Provide(func() *feed { return &feed{} }),
		fx.Decorate(func(s store, f *feed) store { return feedStore{s, f} }),
		hostfx.Provide(host.Registration{Order: 15}, newGRPCServer(addr)),
	)
}

type grpcParams struct {
	fx.In
	Orders *orders
	Feed   *feed
}

// newGRPCServer builds the gRPC entrypoint with no telemetry or health option: the
// Host gives it its logger, registry and tracer provider, and ties its health service
// to the Host's readiness and checks (the verdicts of /readyz), BeginDraining
// included.
func newGRPCServer(addr string) func(grpcParams) (*grpcentry.Server, error) {
	return func(p grpcParams) (*grpcentry.Server, error) {
		api := &ordersAPI{orders: p.Orders, feed: p.Feed}
		return grpcentry.New(grpcentry.Config{Addr: addr}, func(g *grpc.Server) {
			ordersv1.RegisterOrdersServiceServer(g, api)
			reflection.Register(g)
		}, grpcentry.WithHealthServices(ordersv1.OrdersService_ServiceDesc.ServiceName))
	}
}

// ordersAPI is orders.v1.OrdersService over the same store and intake as the HTTP
// handlers.
type ordersAPI struct {
	ordersv1.UnimplementedOrdersServiceServer
	orders *orders
	feed   *feed
}

func (a *ordersAPI) CreateOrder(ctx context.Context, req *ordersv1.CreateOrderRequest) (*ordersv1.CreateOrderResponse, error) {
	o := fromProto(req.GetOrder())
	if err := o.validate(); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := a.orders.submit(ctx, o); err != nil {
		return nil, status.Error(codes.Unavailable, "could not accept the order, retry")
	}
	return &ordersv1.CreateOrderResponse{Order: toProto(o)}, nil
}

func (a *ordersAPI) GetOrder(ctx context.Context, req *ordersv1.GetOrderRequest) (*ordersv1.GetOrderResponse, error) {
	o, ok, err := a.orders.store.Get(ctx, req.GetId())
	switch {
	case err != nil:
		return nil, status.Error(codes.Unavailable, "store unavailable")
	case !ok:
		return nil, status.Errorf(codes.NotFound, "no order %q", req.GetId())
	}
	return &ordersv1.GetOrderResponse{Order: toProto(o)}, nil
}

// WatchOrders streams the orders handled from now on. It returns when the client
// goes away or the drain reaches it; grpcentry then ends it UNAVAILABLE.
func (a *ordersAPI) WatchOrders(_ *ordersv1.WatchOrdersRequest, st grpc.ServerStreamingServer[ordersv1.WatchOrdersResponse]) error {
	ch, cancel := a.feed.subscribe()
	defer cancel()
	for {
		select {
		case <-st.Context().Done():
			return st.Context().Err()
		case o := <-ch:
			if err := st.Send(&ordersv1.WatchOrdersResponse{Order: toProto(o)}); err != nil {
				return err
			}
		}
	}
}

func fromProto(o *ordersv1.Order) Order {
	return Order{ID: o.GetId(), Item: o.GetItem(), Qty: int(o.GetQty())}
}

func toProto(o Order) *ordersv1.Order {
	return &ordersv1.Order{Id: o.ID, Item: o.Item, Qty: int32(o.Qty), Deliveries: int32(o.Deliveries)}
}

// feed hands every order the store handles to the WatchOrders streams. A watcher
// that falls feedBuffer orders behind misses the next ones rather than slowing the
// consumer down.
type feed struct {
	mu   sync.Mutex
	subs map[chan Order]struct{}
}

const feedBuffer = 256

func (f *feed) subscribe() (<-chan Order, func()) {
	ch := make(chan Order, feedBuffer)
	f.mu.Lock()
	if f.subs == nil {
		f.subs = make(map[chan Order]struct{})
	}
	f.subs[ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}
}

func (f *feed) publish(o Order) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- o:
		default:
		}
	}
}

// feedStore publishes each order it handles.
type feedStore struct {
	store
	feed *feed
}

func (s feedStore) Handle(ctx context.Context, o Order) error {
	if err := s.store.Handle(ctx, o); err != nil {
		return err
	}
	s.feed.publish(o)
	return nil
}
