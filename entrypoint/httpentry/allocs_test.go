package httpentry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/servicewright/servicewright/entrypoint"
)

// TestMiddlewareAllocs holds the Server's allocations per request to what they are
// (docs/cost.md): an untraced request, with admission and metrics on, allocates
// nothing more than the bare handler; a traced one allocates only what the span
// needs. A change that adds an allocation to the request path fails here.
func TestMiddlewareAllocs(t *testing.T) {
	if raceOn {
		t.Skip("the race detector makes sync.Pool drop objects: allocation counts are not exact")
	}
	ok := []byte("ok")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) { w.Write(ok) })
	mux.HandleFunc("GET /text", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	req := httptest.NewRequest("GET", "/orders", nil)
	w := &discard{h: http.Header{}}
	allocs := func(h http.Handler) float64 {
		return testing.AllocsPerRun(2000, func() { h.ServeHTTP(w, req) })
	}
	server := func(opts ...Option) http.Handler {
		s, err := New(Config{}, mux, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s.srv.Handler
	}
	bare := allocs(mux)

	if got := allocs(server(WithTelemetry(entrypoint.Telemetry{Registerer: prometheus.NewRegistry()}))); got != bare {
		t.Errorf("untraced request through the Server: %v allocations, bare handler %v: want no more", got, bare)
	}
	// A handler that writes a string: the Server's writer passes it on as a string,
	// as net/http's does, rather than copying it to a []byte.
	text := httptest.NewRequest("GET", "/text", nil)
	bareText := testing.AllocsPerRun(2000, func() { mux.ServeHTTP(w, text) })
	s := server()
	if got := testing.AllocsPerRun(2000, func() { s.ServeHTTP(w, text) }); got != bareText {
		t.Errorf("io.WriteString through the Server: %v allocations, bare handler %v: want no more", got, bareText)
	}

	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
		extra   float64 // allocations over the bare handler
	}{
		// The span's context in the ctx and the request carrying it (2), the SDK's
		// non-recording span (1).
		{"unsampled", sdktrace.NeverSample(), 3},
		// The same, the SDK's recording span instead (1), its attributes (1), and its
		// snapshot at End (1).
		{"sampled", sdktrace.AlwaysSample(), 5},
	} {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(c.sampler))
		got := allocs(server(WithTelemetry(entrypoint.Telemetry{TracerProvider: tp, Propagator: prop})))
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %v allocations, bare %v", c.name, got, bare)
		if got > bare+c.extra {
			t.Errorf("%s request: %v allocations, bare handler %v: want at most %v more", c.name, got, bare, c.extra)
		}
	}
}
