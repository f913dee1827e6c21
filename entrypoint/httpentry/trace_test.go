package httpentry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/servicewright/servicewright/entrypoint"
)

// A span's attributes are built in the pooled response (trace.go): each request's
// span has its own method, scheme, path, route and status, and none of a previous
// request's; its name is "{method} {route}" whether the pattern names a method or not.
func TestSpanAttributesPerRequest(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {})
	s, err := New(Config{}, mux, WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, target string
		name           string
		want           map[string]string // "" : the attribute is absent
	}{
		{"GET", "/orders/7", "GET /orders/{id}", map[string]string{"http.request.method": "GET", "url.scheme": "http",
			"url.path": "/orders/7", "http.route": "/orders/{id}", "http.response.status_code": "202"}},
		{"HEAD", "/orders/8", "HEAD /orders/{id}", map[string]string{"http.request.method": "HEAD", "http.route": "/orders/{id}"}},
		{"POST", "/plain", "POST /plain", map[string]string{"http.request.method": "POST", "url.path": "/plain", "http.route": "/plain"}},
		{"GET", "https://example.com/nowhere", "GET", map[string]string{"url.scheme": "https", "url.path": "/nowhere",
			"http.route": "", "http.response.status_code": "404"}},
	} {
		s.srv.Handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.target, nil))
		spans := rec.Ended()
		sp := spans[len(spans)-1]
		if sp.Name() != c.name {
			t.Errorf("%s %s: span %q, want %q", c.method, c.target, sp.Name(), c.name)
		}
		attrs := map[string]string{}
		for _, kv := range sp.Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		for k, v := range c.want {
			if got, ok := attrs[k]; v == "" && ok || v != "" && got != v {
				t.Errorf("%s %s: %s = %q (present %v), want %q", c.method, c.target, k, got, ok, v)
			}
		}
	}
}
