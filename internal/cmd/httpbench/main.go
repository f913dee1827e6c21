// Command httpbench serves one handler on -addr, either through httpentry or with a
// bare net/http server, so make bench can load both with wrk in the same run.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
)

func hello(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("hello\n")) }

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	mode := flag.String("mode", "bare", "bare | entry | entry+metrics | entry+trace-all | entry+trace-1pct | host")
	flag.Parse()
	if *mode == "host" {
		mainHost(*addr)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := serve(ctx, *addr, *mode); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func serve(ctx context.Context, addr, mode string) error {
	if mode == "bare" {
		// The same timeouts as httpentry's defaults, so the comparison is of the
		// entrypoint's work per request, not of a timeout policy.
		srv := &http.Server{Addr: addr, Handler: http.HandlerFunc(hello),
			ReadHeaderTimeout: httpentry.DefaultReadHeaderTimeout, IdleTimeout: httpentry.DefaultIdleTimeout,
			MaxHeaderBytes: httpentry.DefaultMaxHeaderBytes}
		go func() { <-ctx.Done(); _ = srv.Shutdown(context.Background()) }()
		if err := srv.ListenAndServe(); err != http.ErrServerClosed {
			return err
		}
		return nil
	}
	var opts []httpentry.Option
	switch mode {
	case "entry+metrics":
		opts = append(opts, httpentry.WithTelemetry(entrypoint.Telemetry{Registerer: prometheus.NewRegistry()}))
	case "entry+trace-all", "entry+trace-1pct":
		// Metrics on, as under the Host, and every request traced: each span sampled,
		// or 1 % of them (ParentBased(TraceIDRatioBased(0.01)), the usual production
		// setting), through a batch processor whose exporter drops the batches, so the
		// figure is the span's cost in the request path, not an exporter's.
		sampler := sdktrace.AlwaysSample()
		if mode == "entry+trace-1pct" {
			sampler = sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(sampler))
		defer tp.Shutdown(context.Background())
		opts = append(opts, httpentry.WithTelemetry(entrypoint.Telemetry{Registerer: prometheus.NewRegistry(), TracerProvider: tp}))
	}
	s, err := httpentry.New(httpentry.Config{Addr: addr}, http.HandlerFunc(hello), opts...)
	if err != nil {
		return err
	}
	if err := s.Bind(ctx); err != nil {
		return err
	}
	if err := s.Serve(context.Background(), ctx.Done()); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Drain(dctx)
	return s.Stop(dctx)
}

// discardExporter drops what the batch processor hands it.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// mainHost runs the handler as a whole servicewright service: the HTTP entrypoint
// under host.Main, with the probe listener on PROBE_ADDR. make bench times its
// exec → ready and SIGTERM → exit against the bare baseline.
func mainHost(addr string) {
	s, err := httpentry.New(httpentry.Config{Addr: addr}, http.HandlerFunc(hello))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(host.ExitCode(err))
	}
	host.Main(host.AppSpec{
		ServiceName: "httpbench",
		Entrypoints: []host.Registration{{Entrypoint: s}},
		Probes:      health.ListenerConfig{Addr: os.Getenv("PROBE_ADDR")},
	})
}
