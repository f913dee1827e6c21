// Command hellobaseline is the README's hello service written without servicewright,
// on what a careful team would pick by hand: net/http, zap, the Prometheus client and
// the OpenTelemetry SDK (a tracer provider and a meter provider read by Prometheus).
// It answers GET /hello, serves /metrics, /livez and /readyz on a probe port, and on
// SIGTERM withdraws readiness, shuts the server down and flushes the providers.
// `make bench` compares its stripped binary with internal/doccheck/snippets/hellohttp's.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.uber.org/zap"
)

func main() {
	log, _ := zap.NewProduction()
	defer func() { _ = log.Sync() }()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "http_requests_total"}, []string{"code"})
	reg.MustRegister(requests)

	res := resource.NewSchemaless(semconv.ServiceName("hello"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		log.Fatal("metrics", zap.Error(err))
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hello")
		requests.WithLabelValues("200").Inc()
	})
	srv := &http.Server{Addr: envOr("HTTP_ADDR", ":8080"), Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	var ready atomic.Bool
	probes := http.NewServeMux()
	probes.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	probes.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	probes.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	probe := &http.Server{Addr: envOr("PROBE_ADDR", ":8079"), Handler: probes, ReadHeaderTimeout: 10 * time.Second}

	errs := make(chan error, 2)
	go func() { errs <- probe.ListenAndServe() }()
	go func() { errs <- srv.ListenAndServe() }()
	ready.Store(true)
	log.Info("ready")

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
	case err := <-errs:
		log.Error("serve", zap.Error(err))
	}
	ready.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("shutdown", zap.Error(err))
	}
	_ = tp.Shutdown(ctx)
	_ = mp.Shutdown(ctx)
	_ = probe.Shutdown(ctx)
	log.Info("stopped")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
