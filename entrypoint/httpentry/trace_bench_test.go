package httpentry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/servicewright/servicewright/entrypoint"
)

// discardExporter receives batches and drops them, so the benchmark measures the
// span's cost in the request path, not an exporter's.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkTracing measures a traced request in process, for every request sampled
// through a batch processor and for a 1 % ratio sampler, against the same handler
// bare and behind the Server untraced, and behind otelhttp configured as the Server
// used it before (its own spans, no-op meter): the row the Server's own span
// replaced. The writer discards everything and allocates nothing (as in
// BenchmarkMiddleware), so that a row's excess is the tracing's own.
func BenchmarkTracing(b *testing.B) {
	ok := []byte("ok")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) { w.Write(ok) })
	req := httptest.NewRequest("GET", "/orders/7", nil)
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	through := func(h http.Handler) func(*testing.B) {
		return func(b *testing.B) {
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		}
	}
	server := func(handler http.Handler, opts ...Option) http.Handler {
		s, err := New(Config{}, handler, opts...)
		if err != nil {
			b.Fatal(err)
		}
		return s.srv.Handler
	}
	b.Run("bare", through(mux))
	b.Run("untraced", through(server(mux)))
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{
		{"all", sdktrace.AlwaysSample()},
		{"ratio-1%", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))},
	} {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(c.sampler))
		b.Run(c.name+"/server-span", through(server(mux, WithTelemetry(entrypoint.Telemetry{TracerProvider: tp, Propagator: prop}))))
		b.Run(c.name+"/otelhttp", through(server(otelhttp.NewHandler(mux, "http",
			otelhttp.WithTracerProvider(tp), otelhttp.WithMeterProvider(noop.NewMeterProvider()), otelhttp.WithPropagators(prop)))))
		tp.Shutdown(context.Background())
	}
}
