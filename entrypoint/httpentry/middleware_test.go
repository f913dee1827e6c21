package httpentry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/prestop"
	"github.com/servicewright/servicewright/internal/testenv"
)

// through passes one request through the Server's root handler, in process.
func through(s *Server, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.srv.Handler.ServeHTTP(rec, r)
	return rec
}

// Middleware runs in the order given, the first outermost, across several
// WithMiddleware options, inside the request id: it sees the id in the request.
func TestMiddlewareOrder(t *testing.T) {
	var trail []string
	mark := func(name string) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				trail = append(trail, name+">"+RequestID(r.Context()))
				next.ServeHTTP(w, r)
				trail = append(trail, "<"+name)
			})
		}
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { trail = append(trail, "handler") })
	s, err := New(Config{}, h, WithRequestID(), WithMiddleware(mark("a"), mark("b")), WithMiddleware(mark("c")))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set(requestIDHeader, "id-1")
	through(s, r)
	want := "a>id-1 b>id-1 c>id-1 handler <c <b <a"
	if got := strings.Join(trail, " "); got != want {
		t.Errorf("trail = %q, want %q", got, want)
	}
}

// A nil middleware, or one that makes a nil handler, is a ConfigError naming
// WithMiddleware; so is an access log that would log a credential header.
func TestMiddlewareConfigErrors(t *testing.T) {
	ok := http.NotFoundHandler()
	for _, c := range []struct {
		name string
		opt  Option
		want string
	}{
		{"nil middleware", WithMiddleware(nil), "WithMiddleware: middleware 1 of 1 is nil"},
		{"nil handler", WithMiddleware(func(http.Handler) http.Handler { return nil }), "WithMiddleware: middleware 1 of 1 returned a nil handler"},
		{"negative Every", WithAccessLog(AccessLog{Every: -1}), "WithAccessLog: Every must not be negative"},
		{"Authorization", WithAccessLog(AccessLog{Headers: []string{"authorization"}}), `WithAccessLog: header "authorization" carries a credential`},
		{"PreStop token", WithAccessLog(AccessLog{Headers: []string{prestop.Header}}), "carries a credential"},
		{"pprof token", WithAccessLog(AccessLog{Headers: []string{prestop.PprofHeader}}), "carries a credential"},
	} {
		_, err := New(Config{}, ok, c.opt)
		if _, isConfig := errors.AsType[*fault.ConfigError](err); !isConfig || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want a ConfigError with %q", c.name, err, c.want)
		}
	}
}

// A middleware that panics is recovered as a panicking handler is: logged with
// the request id, counted, reported with it, answered with a 500 that still
// carries the id, and access-logged as a 500.
func TestMiddlewarePanicRecovered(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	boom := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("middleware broke") })
	}
	rep := &testenv.Reports{}
	s, err := New(Config{}, http.NotFoundHandler(), WithTelemetry(entrypoint.Telemetry{Logger: zap.New(core)}), WithRequestID(), WithTelemetry(entrypoint.Telemetry{Reporter: rep}),
		WithAccessLog(AccessLog{Every: 1000}), WithMiddleware(boom))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/x", nil)
	r.Header.Set(requestIDHeader, "req-7")
	rec := through(s, r)
	if rec.Code != http.StatusInternalServerError || rec.Header().Get(requestIDHeader) != "req-7" {
		t.Errorf("answer = %d, id %q; want 500 with id req-7", rec.Code, rec.Header().Get(requestIDHeader))
	}
	if got := s.Stats().Panics; got != 1 {
		t.Errorf("Panics = %d, want 1", got)
	}
	if _, tags := rep.Get(); len(tags) != 1 || tags[0][tagRequestID] != "req-7" {
		t.Errorf("reported tags = %v, want one report with request_id req-7", tags)
	}
	panics := logs.FilterMessage("http handler panicked").FilterField(zap.String("request_id", "req-7"))
	access := logs.FilterMessage("http request").FilterField(zap.Int("status", 500)).FilterField(zap.String("request_id", "req-7"))
	if panics.Len() != 1 || access.Len() != 1 {
		t.Errorf("panic logs %d, access logs of the 500 %d; want 1 each: %v", panics.Len(), access.Len(), logs.All())
	}
}

// The access log logs one in Every of the requests below 500 and every 5xx, and
// never a credential header nor a query value; the headers named are logged.
func TestAccessLogSamplingAndRedaction(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	s, err := New(Config{}, h, WithAccessLog(AccessLog{Every: 3, Headers: []string{"user-agent"}, Logger: zap.New(core)}))
	if err != nil {
		t.Fatal(err)
	}
	send := func(path string) {
		r := httptest.NewRequest("GET", path+"?token=s3cret-q&page=2", nil)
		r.Header.Set("Authorization", "Bearer s3cret-a")
		r.Header.Set("Cookie", "session=s3cret-c")
		r.Header.Set(prestop.Header, "s3cret-p")
		r.Header.Set("User-Agent", "probe/1")
		through(s, r)
	}
	for range 9 {
		send("/ok")
	}
	send("/fail")
	send("/fail")
	all := logs.All()
	if ok, failed := logs.FilterField(zap.Int("status", 200)).Len(), logs.FilterField(zap.Int("status", 502)).Len(); ok != 3 || failed != 2 {
		t.Errorf("logged %d of 9 200s and %d of 2 502s, want 3 and 2", ok, failed)
	}
	for _, e := range all {
		m := e.ContextMap()
		for k, v := range m {
			if s := strings.ToLower(k) + "=" + strings.ToLower(toString(v)); strings.Contains(s, "s3cret") || strings.Contains(s, "session") {
				t.Errorf("credential or query value logged: %s", s)
			}
		}
		if m["query_keys"] != "token&page" || m["path"] == nil || m["method"] != "GET" {
			t.Errorf("entry %v: want path, method and query_keys token&page", m)
		}
		if ua, _ := m["User-Agent"].([]any); len(ua) != 1 || ua[0] != "probe/1" {
			t.Errorf("User-Agent = %v, want [probe/1]", m["User-Agent"])
		}
	}
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, x := range v {
			b.WriteString(toString(x))
		}
		return b.String()
	}
	return ""
}

// The request id: a well-formed incoming one is kept, a missing or malformed one
// replaced by a new one; the response, the handler's context (so its logs), the
// access log and the server span all carry the same id.
func TestRequestIDPropagation(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	log := zap.New(core)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Info("handled", zap.String("request_id", RequestID(r.Context())))
	})
	s, err := New(Config{}, h, WithTelemetry(entrypoint.Telemetry{Logger: log, TracerProvider: tp}), WithRequestID(), WithAccessLog(AccessLog{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, in string }{
		{"well formed", "edge-7f3a:42"},
		{"absent", ""},
		{"malformed", "bad id\r\nx: y"},
		{"too long", strings.Repeat("a", maxRequestID+1)},
	} {
		logs.TakeAll()
		r := httptest.NewRequest("GET", "/", nil)
		if c.in != "" {
			r.Header.Set(requestIDHeader, c.in)
		}
		id := through(s, r).Header().Get(requestIDHeader)
		switch {
		case c.name == "well formed" && id != c.in:
			t.Errorf("%s: id %q, want the incoming %q", c.name, id, c.in)
		case c.name != "well formed" && (len(id) != 32 || !wellFormedID(id)):
			t.Errorf("%s: id %q, want 32 new hex digits", c.name, id)
		}
		if n := logs.FilterField(zap.String("request_id", id)).Len(); n != 2 {
			t.Errorf("%s: %d log entries carry %q, want 2 (handler, access log): %v", c.name, n, id, logs.All())
		}
		spans := rec.Ended()
		var got string
		for _, kv := range spans[len(spans)-1].Attributes() {
			if kv.Key == "http.request.id" {
				got = kv.Value.AsString()
			}
		}
		if got != id {
			t.Errorf("%s: span http.request.id = %q, want %q", c.name, got, id)
		}
	}
}

// Without WithRequestID the Server neither reads nor sets the header.
func TestRequestIDOff(t *testing.T) {
	var seen string
	s, err := New(Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = RequestID(r.Context()) }))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set(requestIDHeader, "x")
	if got := through(s, r).Header().Get(requestIDHeader); got != "" || seen != "" {
		t.Errorf("header %q, ctx %q; want neither", got, seen)
	}
}

// A request refused by the drain never reaches the middleware, and is not
// access-logged: it is counted instead.
func TestMiddlewareNotRunForRefused(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	ran := 0
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran++; next.ServeHTTP(w, r) })
	}
	s, err := New(Config{}, http.NotFoundHandler(), WithTelemetry(entrypoint.Telemetry{Logger: zap.New(core)}), WithRequestID(),
		WithAccessLog(AccessLog{}), WithMiddleware(count))
	if err != nil {
		t.Fatal(err)
	}
	through(s, httptest.NewRequest("GET", "/", nil))
	s.gate.Close() // Drain's first step
	rec := through(s, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusServiceUnavailable || ran != 1 || logs.Len() != 1 || s.Stats().RefusedDraining != 1 {
		t.Errorf("refused: %d, middleware ran %d times, %d log entries, refused %d; want 503, 1, 1, 1",
			rec.Code, ran, logs.Len(), s.Stats().RefusedDraining)
	}
	if rec.Header().Get(requestIDHeader) != "" {
		t.Errorf("a refused request got id %q", rec.Header().Get(requestIDHeader))
	}
}

// A middleware that hands the handler a copy of the request does not hide the
// route ServeMux matched on the copy: the span is named after it, the access log
// and a panic's log carry it.
func TestMiddlewareCopiedRequestKeepsRoute(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	type key struct{}
	copying := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(unwrapping{w}, r.WithContext(context.WithValue(r.Context(), key{}, 1)))
		})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /boom/{id}", func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	s, err := New(Config{}, mux, WithTelemetry(entrypoint.Telemetry{Logger: zap.New(core), TracerProvider: tp}),
		WithAccessLog(AccessLog{}), WithMiddleware(copying))
	if err != nil {
		t.Fatal(err)
	}
	through(s, httptest.NewRequest("GET", "/orders/7", nil))
	through(s, httptest.NewRequest("GET", "/boom/1", nil))
	var names []string
	for _, sp := range rec.Ended() {
		names = append(names, sp.Name())
	}
	if got := strings.Join(names, ","); got != "GET /orders/{id},GET /boom/{id}" {
		t.Errorf("spans %q, want them named after the routes", got)
	}
	if n := logs.FilterField(zap.String("pattern", "/orders/{id}")).Len(); n != 1 {
		t.Errorf("%d access log entries with the route /orders/{id}, want 1: %v", n, logs.All())
	}
	if n := logs.FilterMessage("http handler panicked").FilterField(zap.String("pattern", "GET /boom/{id}")).Len(); n != 1 {
		t.Errorf("%d panic logs with the pattern, want 1: %v", n, logs.All())
	}
}

// unwrapping is a middleware's ResponseWriter wrapper that lets the wrapped one be
// reached, as http.ResponseController asks.
type unwrapping struct{ http.ResponseWriter }

func (u unwrapping) Unwrap() http.ResponseWriter { return u.ResponseWriter }
