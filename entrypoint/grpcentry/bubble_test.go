package grpcentry_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/host/hosttest"
)

// runInBubble is run for a testing/synctest bubble, where real sockets cannot be
// used: the Server listens on an in-memory hosttest.Network and the client dials it,
// so that every wait of the Server, its drain and its client is in virtual time and
// a duration the test reads is the code's own, not the machine's load. Call it
// inside the bubble.
func runInBubble(t *testing.T, cfg grpcentry.Config, svc *service, opts ...grpcentry.Option) *running {
	t.Helper()
	n := hosttest.NewNetwork()
	s, err := grpcentry.New(cfg, func(g *grpc.Server) { testpb.RegisterTestServiceServer(g, svc) },
		append(opts, grpcentry.WithListener(n.Listener()))...)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	if err := s.Bind(context.Background()); err != nil {
		t.Fatalf("Bind = %v", err)
	}
	x := serveAndClean(t, s, dialNetwork(t, n))
	x.network = n
	return x
}

// dialNetwork opens a raw connection to x's Server over its in-memory network (set
// by runInBubble), closed at Cleanup.
func (x *running) dialNetwork() net.Conn {
	x.t.Helper()
	c, err := x.network.Dial()
	if err != nil {
		x.t.Fatal(err)
	}
	x.t.Cleanup(func() { c.Close() })
	return c
}

// dialNetwork returns a client connection whose every dial goes to n.
func dialNetwork(t *testing.T, n *hosttest.Network) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///hosttest", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return n.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}
