package httpentry

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/entrypoint"
)

// Requests of different routes, methods and statuses through the same pooled
// response wrapper (one goroutine, one after another) are each counted in their
// own series: the wrapper's cache of its last series is a cache, never a label.
func TestMetricsSeriesFollowEachRequest(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/b", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("teapot") {
			w.WriteHeader(http.StatusTeapot)
		}
	})
	reg := prometheus.NewRegistry()
	s, err := New(Config{}, mux, WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	if err != nil {
		t.Fatal(err)
	}
	w := &discard{h: http.Header{}}
	for _, target := range []string{"GET /a", "GET /b", "GET /b?teapot", "POST /b", "GET /a", "GET /nowhere", "GET /a", "POST /b?teapot"} {
		method, path, _ := strings.Cut(target, " ")
		s.srv.Handler.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	}
	got := gathered(t, reg)
	for series, want := range map[string]float64{
		`servicewright_http_requests_total{code="200",entrypoint="http",method="GET",route="/a"}`:           3,
		`servicewright_http_requests_total{code="200",entrypoint="http",method="GET",route="/b"}`:           1,
		`servicewright_http_requests_total{code="418",entrypoint="http",method="GET",route="/b"}`:           1,
		`servicewright_http_requests_total{code="200",entrypoint="http",method="POST",route="/b"}`:          1,
		`servicewright_http_requests_total{code="418",entrypoint="http",method="POST",route="/b"}`:          1,
		`servicewright_http_requests_total{code="404",entrypoint="http",method="GET",route="unmatched"}`:    1,
		`servicewright_http_request_duration_seconds{code="200",entrypoint="http",method="GET",route="/a"}`: 3,
	} {
		if v := got[series]; v != want {
			t.Errorf("%s = %v, want %v", series, v, want)
		}
	}
}
