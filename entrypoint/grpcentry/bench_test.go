package grpcentry_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
)

// BenchmarkUnary measures unary RPC throughput on loopback through one client
// connection with parallel callers: the same handler served by a bare grpc.Server,
// by grpcentry (Gate, panic recovery, RED metrics), and by grpcentry tracing every
// call (AlwaysSample) or 1 % of them (ParentBased(TraceIDRatioBased(0.01))) through
// a batch processor whose exporter drops the batches. make bench reports the ratios.
func BenchmarkUnary(b *testing.B) {
	svc := &service{}
	register := func(g *grpc.Server) { testpb.RegisterTestServiceServer(g, svc) }
	call := func(b *testing.B, addr string) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		client := testpb.NewTestServiceClient(conn)
		ctx := context.Background()
		if _, err := client.EmptyCall(ctx, &testpb.Empty{}); err != nil { // connect outside the timing
			b.Fatal(err)
		}
		b.ReportAllocs()
		cpu := processCPU(b)
		b.ResetTimer()
		b.SetParallelism(8) // 16 callers on 2 cores: throughput, not one caller's latency
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rpc/s")
		// The process's CPU time per call, client's and server's: unlike rpc/s it
		// holds on a machine shared with other work.
		b.ReportMetric(float64(processCPU(b)-cpu)/1e3/float64(b.N), "cpu-µs/op")
	}
	b.Run("bare", func(b *testing.B) {
		addr, stop := serveFor(b, "bare", register)
		call(b, addr)
		stop()
	})
	entry := func(opts ...grpcentry.Option) func(*testing.B) {
		return func(b *testing.B) {
			addr, stop := serveFor(b, "grpcentry", register,
				append([]grpcentry.Option{grpcentry.WithTelemetry(entrypoint.Telemetry{Registerer: prometheus.NewRegistry()})}, opts...)...)
			call(b, addr)
			stop()
		}
	}
	b.Run("grpcentry", entry())
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{
		{"grpcentry+trace-all", sdktrace.AlwaysSample()},
		{"grpcentry+trace-1pct", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))},
	} {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(c.sampler))
		b.Run(c.name, entry(grpcentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp})))
		if err := tp.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// processCPU is the CPU time the process used so far, user and system, in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// discardExporter receives batches and drops them, so the benchmark measures the
// span's cost in the call's path, not an exporter's.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }
