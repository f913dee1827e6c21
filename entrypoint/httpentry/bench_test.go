package httpentry

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkMiddleware measures what the Server adds per request, in process: the
// same handler bare, behind the Gate (admission, response wrapper, recover), and
// behind the Gate with metrics. Each iteration includes an httptest.ResponseRecorder,
// so compare the rows with one another rather than with zero.
func BenchmarkMiddleware(b *testing.B) {
	ok := []byte("ok")
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(ok) })
	req := httptest.NewRequest("GET", "/", nil)
	through := func(h http.Handler) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
		}
	}
	server := func(opts ...Option) http.Handler {
		s, err := New(Config{}, handler, opts...)
		if err != nil {
			b.Fatal(err)
		}
		return s.srv.Handler
	}
	b.Run("bare", through(handler))
	b.Run("gate", through(server()))
	b.Run("gate+metrics", through(server(WithRegisterer(prometheus.NewRegistry()))))
}
