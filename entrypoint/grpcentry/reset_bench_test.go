package grpcentry_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/servicewright/servicewright/entrypoint/grpcentry"
)

// BenchmarkRapidReset measures a normal unary call's latency, one call after another
// on its own connection, with no other load ("quiet") and during an HTTP/2 rapid-reset
// flood ("flood": 2 attackers opening and resetting streams as fast as they can
// write, each reconnecting when cut), served by grpcentry and by a bare grpc.Server
// with grpc-go's defaults. It reports the median as p50-ns and the 99th percentile as p99-ns. make bench reports the
// flood/quiet ratios.
func BenchmarkRapidReset(b *testing.B) {
	svc := &service{}
	register := func(g *grpc.Server) { testpb.RegisterTestServiceServer(g, svc) }
	for _, server := range []string{"bare", "grpcentry"} {
		for _, load := range []string{"quiet", "flood"} {
			b.Run(server+"/"+load, func(b *testing.B) {
				addr, stop := serveFor(b, server, register)
				defer stop()
				if load == "flood" {
					end := flood(b, addr)
					defer end()
				}
				conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				client := testpb.NewTestServiceClient(conn)
				ctx := context.Background()
				if _, err := client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
					b.Fatal(err)
				}
				took := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					if _, err := client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2]), "p50-ns")
				b.ReportMetric(float64(took[len(took)*99/100]), "p99-ns")
			})
		}
	}
}

// serveFor serves register on a loopback port with a bare grpc.Server or grpcentry
// (with opts), and returns its address and the function that stops it.
func serveFor(b *testing.B, server string, register func(*grpc.Server), opts ...grpcentry.Option) (string, func()) {
	if server == "bare" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		g := grpc.NewServer()
		register(g)
		done := make(chan struct{})
		go func() { defer close(done); _ = g.Serve(ln) }()
		return ln.Addr().String(), func() { g.Stop(); <-done }
	}
	s, err := grpcentry.New(grpcentry.Config{Addr: "127.0.0.1:0"}, register, opts...)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Bind(context.Background()); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), stop) }()
	return s.Addr().String(), func() {
		close(stop)
		<-served
		if err := s.Stop(context.Background()); err != nil {
			b.Error(err)
		}
	}
}

// flood runs 2 rapid-reset attackers against addr until the returned function is
// called.
func flood(b *testing.B, addr string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				stopWatch := context.AfterFunc(ctx, func() { conn.Close() })
				c := dialH2(b, conn)
				for ctx.Err() == nil && c.resetN(64) == nil {
				}
				stopWatch()
				conn.Close()
				<-c.closed
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}
