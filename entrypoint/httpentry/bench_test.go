package httpentry

import (
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/admission"
)

// discard is a ResponseWriter that keeps nothing and allocates nothing, so that the
// rows of BenchmarkMiddleware differ only by what the Server adds.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// WriteString makes discard an io.StringWriter, as net/http's own writer is.
func (d *discard) WriteString(p string) (int, error) { return len(p), nil }

// processCPU is the CPU time the process used so far, user and system, in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkMiddleware measures what the Server adds per request, in process: the
// same handler bare; behind the Gate with admission on (the default: admission,
// response wrapper, recover); with admission off; and with metrics. The writer
// discards everything and allocates nothing, so a row's excess over "bare" is the
// middleware's own cost; the last rows show what a request id, the access log and a
// user's middleware add.
func BenchmarkMiddleware(b *testing.B) {
	ok := []byte("ok")
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(ok) })
	req := httptest.NewRequest("GET", "/", nil)
	through := func(h http.Handler) func(*testing.B) {
		return func(b *testing.B) {
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			cpu := processCPU(b)
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
			// The process's CPU time per request: unlike ns/op it does not count the
			// time the benchmark waited for a CPU on a machine shared with other work.
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
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
	b.Run("gate+metrics", through(server(WithTelemetry(entrypoint.Telemetry{Registerer: prometheus.NewRegistry()}))))
	// What WithRequestID adds (a new id: the request carries none), and the access
	// log on top of it, 1 in 100 logged to a logger that drops what it is given.
	b.Run("gate+requestid", through(server(WithRequestID())))
	b.Run("gate+requestid+accesslog", through(server(WithRequestID(), WithAccessLog(AccessLog{Every: 100, Logger: zap.NewNop()}))))
	b.Run("gate+middleware", through(server(WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(w, r) })
	}))))
}
