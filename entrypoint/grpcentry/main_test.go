package grpcentry_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/host/hosttest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// failAfter bounds every wait in these tests. It is a failure timeout, never a
// stand-in for synchronisation.
const failAfter = 10 * time.Second

// service is the test service; each test sets the behaviour it needs.
type service struct {
	testpb.UnimplementedTestServiceServer
	unary  func(ctx context.Context) error
	stream func(ctx context.Context, send func() error) error
}

func (s *service) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func (s *service) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if s.unary != nil {
		if err := s.unary(ctx); err != nil {
			return nil, err
		}
	}
	return &testpb.SimpleResponse{}, nil
}

func (s *service) StreamingOutputCall(_ *testpb.StreamingOutputCallRequest, st grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	return s.stream(st.Context(), func() error { return st.Send(&testpb.StreamingOutputCallResponse{}) })
}

// ticking is a stream handler that sends every 10 ms until its ctx is done.
func ticking(ctx context.Context, send func() error) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if err := send(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// running is a Server driven as the Host drives it: bound, serving in the
// background, then stopped and drained by the test.
type running struct {
	t      *testing.T
	s      *grpcentry.Server
	conn   *grpc.ClientConn
	client testpb.TestServiceClient
	health healthpb.HealthClient
	stop   chan struct{}
	once   sync.Once
	served chan error
	// network is the in-memory network of a Server made by runInBubble, else nil.
	network *hosttest.Network
}

// run makes, binds and serves a Server on a loopback port with svc registered.
// Cleanup stops it and closes the client.
func run(t *testing.T, cfg grpcentry.Config, svc *service, opts ...grpcentry.Option) *running {
	t.Helper()
	return runHooked(t, cfg, svc, nil, opts...)
}

// runHooked is run with before called between New and Bind, as the Host calls
// SetDefaults.
func runHooked(t *testing.T, cfg grpcentry.Config, svc *service, before func(*grpcentry.Server), opts ...grpcentry.Option) *running {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := grpcentry.New(cfg, func(g *grpc.Server) { testpb.RegisterTestServiceServer(g, svc) }, opts...)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	if before != nil {
		before(s)
	}
	if err := s.Bind(context.Background()); err != nil {
		t.Fatalf("Bind = %v", err)
	}
	conn, err := grpc.NewClient(s.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	return serveAndClean(t, s, conn)
}

// serveAndClean serves s in the background for a client on conn; Cleanup stops it
// and closes the client.
func serveAndClean(t *testing.T, s *grpcentry.Server, conn *grpc.ClientConn) *running {
	t.Helper()
	x := &running{
		t: t, s: s, conn: conn, client: testpb.NewTestServiceClient(conn), health: healthpb.NewHealthClient(conn),
		stop: make(chan struct{}), served: make(chan error, 1),
	}
	go func() { x.served <- s.Serve(context.Background(), x.stop) }()
	t.Cleanup(func() {
		conn.Close()
		x.endServe()
		ctx, cancel := context.WithTimeout(context.Background(), failAfter)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop = %v", err)
		}
	})
	return x
}

// endServe closes stop, as the Host does when shutdown begins, and checks that Serve
// returns nil.
func (x *running) endServe() {
	x.t.Helper()
	x.once.Do(func() {
		close(x.stop)
		select {
		case err := <-x.served:
			if err != nil {
				x.t.Errorf("Serve = %v", err)
			}
		case <-time.After(failAfter):
			x.t.Fatal("Serve did not return after stop")
		}
	})
}

// drain starts Drain with a budget and returns a channel with its result.
func (x *running) drain(budget time.Duration) <-chan error {
	x.endServe()
	out := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		out <- x.s.Drain(ctx)
	}()
	return out
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), failAfter)
	t.Cleanup(cancel)
	return ctx
}

// waitFor receives from ch or fails the test after failAfter.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failAfter):
		t.Fatalf("%s: nothing after %s", what, failAfter)
		var zero T
		return zero
	}
}
