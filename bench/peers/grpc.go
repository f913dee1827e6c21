package main

import (
	"context"
	"fmt"
	"net"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/servicewright/servicewright/entrypoint/grpcentry"
)

// burnMethod is the one unary method of the gRPC servers: Empty in, Empty out,
// after burning the handler's CPU.
const burnMethod = "/peers.Burn/Do"

// burnService is peers.Burn written by hand, so that the module needs no generated
// code: one unary method, Do, that burns work rounds.
func burnService(work int) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: "peers.Burn",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Do", Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(emptypb.Empty)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(context.Context, any) (any, error) {
				burn(work)
				return &emptypb.Empty{}, nil
			}
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: burnMethod}, h)
		}}},
	}
}

// serveGRPC runs the gRPC server of kind (grpc-bare: grpc-go alone; grpcentry:
// with its admission on) on a loopback port, prints the port on stdout and serves
// until SIGTERM.
func serveGRPC(kind string, work int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	register := func(s *grpc.Server) { s.RegisterService(burnService(work), struct{}{}) }
	switch kind {
	case "grpc-bare":
		s := grpc.NewServer()
		register(s)
		go func() { <-ctx.Done(); s.Stop() }()
		return s.Serve(ln)
	case "grpcentry":
		s, err := grpcentry.New(grpcentry.Config{}, register, grpcentry.WithListener(ln))
		if err != nil {
			return err
		}
		if err := s.Bind(ctx); err != nil {
			return err
		}
		if err := s.Serve(context.Background(), ctx.Done()); err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.Drain(dctx)
		return s.Stop(dctx)
	}
	return fmt.Errorf("unknown server %q", kind)
}

// grpcClient spreads calls over a few HTTP/2 connections, as a client pool would.
type grpcClient struct {
	conns []*grpc.ClientConn
	next  atomic.Uint64
}

func newGRPCClient(addr string, n int) *grpcClient {
	c := &grpcClient{}
	for range n {
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fatal(err)
		}
		c.conns = append(c.conns, cc)
	}
	return c
}

func (c *grpcClient) close() {
	for _, cc := range c.conns {
		cc.Close()
	}
}

// call invokes burnMethod once: RESOURCE_EXHAUSTED and UNAVAILABLE are refusals.
func (c *grpcClient) call(deadline time.Time) (answer, error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cc := c.conns[c.next.Add(1)%uint64(len(c.conns))]
	err := cc.Invoke(ctx, burnMethod, &emptypb.Empty{}, new(emptypb.Empty))
	switch status.Code(err) {
	case codes.OK:
		return answerOK, nil
	case codes.ResourceExhausted, codes.Unavailable:
		return answerRefused, err
	}
	return answerFailed, err
}

// closedLoopGRPC is workers callers each calling as soon as the last call is
// answered, for d; it returns OKs per second.
func closedLoopGRPC(addr string, workers int, d time.Duration) float64 {
	c := newGRPCClient(addr, 4)
	defer c.close()
	end := time.Now().Add(d)
	var ok atomic.Int64
	done := make(chan struct{}, workers)
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for time.Now().Before(end) {
				if a, _ := c.call(end.Add(time.Second)); a == answerOK {
					ok.Add(1)
				}
			}
		}()
	}
	for range workers {
		<-done
	}
	return float64(ok.Load()) / d.Seconds()
}

// openLoopGRPC is openLoop over gRPC.
func openLoopGRPC(addr string, rate float64, warm, measure time.Duration) result {
	c := newGRPCClient(addr, 4)
	defer c.close()
	return openLoopCall(addr, c.call, rate, warm, measure)
}
