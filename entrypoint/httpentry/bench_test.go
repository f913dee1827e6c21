package httpentry

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/entrypoint/admission"
)

// discard is a ResponseWriter that keeps nothing and allocates nothing, so that the
// rows of BenchmarkMiddleware differ only by what the Server adds.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkMiddleware measures what the Server adds per request, in process: the
// same handler bare; behind the Gate with admission on (the default: admission,
// response wrapper, recover); with admission off; and with metrics. The writer
// discards everything and allocates nothing, so a row's excess over "bare" is the
// middleware's own cost.
func BenchmarkMiddleware(b *testing.B) {
	ok := []byte("ok")
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(ok) })
	req := httptest.NewRequest("GET", "/", nil)
	through := func(h http.Handler) func(*testing.B) {
		return func(b *testing.B) {
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
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
	b.Run("gate/admission-off", through(server(WithAdmission(admission.Config{Off: true}))))
	b.Run("gate+metrics", through(server(WithRegisterer(prometheus.NewRegistry()))))
}
