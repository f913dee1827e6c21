package httpentry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
)

// panicky panics on /panic before writing, on /late after the response started,
// and with http.ErrAbortHandler on /abort; anything else answers "ok".
func panicky() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /panic", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000") // must not leak into the 500
		panic("boom")
	})
	mux.HandleFunc("GET /late", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		panic("late boom")
	})
	mux.HandleFunc("GET /abort", func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	return mux
}

func TestHandlerPanics(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	reg := prometheus.NewRegistry()
	x := run(t, Config{}, panicky(), WithTelemetry(entrypoint.Telemetry{Logger: zap.New(core), Registerer: reg}))

	t.Run("a panic is answered 500, logged with its route and counted", func(t *testing.T) {
		code, body, err := x.get("/panic")
		if err != nil || code != 500 || !strings.Contains(body, `"code":"internal"`) {
			t.Errorf("GET /panic = %d %q, %v; want 500 with code internal", code, body, err)
		}
		entries := logs.FilterMessage("http handler panicked").AllUntimed()
		if len(entries) != 1 {
			t.Fatalf("logged %d panics, want 1", len(entries))
		}
		f := entries[0].ContextMap()
		if f["method"] != "GET" || f["path"] != "/panic" || f["pattern"] != "GET /panic" || f["entrypoint"] != "http" {
			t.Errorf("log fields = %v, want method, path, pattern and entrypoint", f)
		}
		if got := x.s.Stats().Panics; got != 1 {
			t.Errorf("Stats().Panics = %d, want 1", got)
		}
		if got := gathered(t, reg)[`servicewright_http_panics_total{entrypoint="http"}`]; got != 1 {
			t.Errorf("panics_total = %v, want 1", got)
		}
	})

	t.Run("the server keeps serving after a panic", func(t *testing.T) {
		x.mustGet("/ok", 200)
	})

	t.Run("a panic after the response started aborts the connection", func(t *testing.T) {
		_, body, err := x.get("/late")
		if err == nil {
			t.Errorf("GET /late read %q cleanly, want the body cut short", body)
		}
		if got := x.s.Stats().Panics; got != 2 {
			t.Errorf("Stats().Panics = %d, want 2", got)
		}
	})

	t.Run("http.ErrAbortHandler passes through and is not a panic", func(t *testing.T) {
		if _, _, err := x.get("/abort"); err == nil {
			t.Error("GET /abort got a response, want the connection aborted")
		}
		if got := x.s.Stats().Panics; got != 2 {
			t.Errorf("Stats().Panics = %d, want 2", got)
		}
		x.mustGet("/ok", 200)
	})
}

// A client that never finishes its headers is cut at ReadHeaderTimeout, to the
// instant in virtual time, and the server still serves others.
func TestSlowHeadersAreCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 200 * time.Millisecond
		x := runInBubble(t, Config{ReadHeaderTimeout: timeout}, newHold())
		c := x.dial()
		start := time.Now()
		if _, err := io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: test\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
		// The rest of the headers never comes; the server must hang up on its own.
		rest, err := c.readToEOF()
		took := time.Since(start)
		if err != nil {
			t.Errorf("connection ended with %v, want the server to close it", err)
		}
		if strings.HasPrefix(rest, "HTTP/1.1 2") {
			t.Errorf("server answered %q", rest)
		}
		if took != timeout {
			t.Errorf("cut after %v of virtual time, want ReadHeaderTimeout (%v)", took, timeout)
		}
		x.mustGet("/ok", 200)
	})
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	x := run(t, Config{}, panicky(), WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	for i := range 3 {
		x.mustGet(fmt.Sprintf("/ok/%d", i), 200) // three raw paths, one route: "/"
	}
	x.mustGet("/panic", 500)
	x.endServe()
	x.s.gate.Close() // Drain's first step: the next request is refused
	x.mustGet("/ok", 503)

	t.Run("RED metrics are exposed under their names", func(t *testing.T) {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range families {
			names = append(names, f.GetName())
			for _, m := range f.GetMetric() {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
					return l.GetName() == "entrypoint" && l.GetValue() == "http"
				}) {
					t.Errorf("%s lacks the label entrypoint=http", f.GetName())
				}
			}
		}
		want := []string{
			"servicewright_http_accept_paused_seconds_total",
			"servicewright_http_accept_paused_total",
			"servicewright_http_admission_limit",
			"servicewright_http_admission_share",
			"servicewright_http_connections_max",
			"servicewright_http_connections_open",
			"servicewright_http_in_flight",
			"servicewright_http_panics_total",
			"servicewright_http_refused_draining_total",
			"servicewright_http_request_duration_seconds",
			"servicewright_http_requests_total",
			"servicewright_http_shed_total",
		}
		if !slices.Equal(names, want) {
			t.Errorf("metric names = %v, want %v", names, want)
		}
	})

	t.Run("requests are counted by code, method and route (the pattern, never the path)", func(t *testing.T) {
		got := gathered(t, reg)
		for series, want := range map[string]float64{
			`servicewright_http_requests_total{code="200",entrypoint="http",method="GET",route="/"}`:                3,
			`servicewright_http_requests_total{code="500",entrypoint="http",method="GET",route="/panic"}`:           1,
			`servicewright_http_request_duration_seconds{code="200",entrypoint="http",method="GET",route="/"}`:      3,
			`servicewright_http_request_duration_seconds{code="500",entrypoint="http",method="GET",route="/panic"}`: 1,
			`servicewright_http_refused_draining_total{entrypoint="http"}`:                                          1,
			`servicewright_http_panics_total{entrypoint="http"}`:                                                    1,
			`servicewright_http_in_flight{entrypoint="http"}`:                                                       0,
			`servicewright_http_shed_total{entrypoint="http",reason="draining"}`:                                    1,
			`servicewright_http_shed_total{entrypoint="http",reason="overload"}`:                                    0,
			`servicewright_http_shed_total{entrypoint="http",reason="saturated"}`:                                   0,
			`servicewright_http_admission_share{entrypoint="http"}`:                                                 1,
			`servicewright_http_admission_limit{entrypoint="http"}`:                                                 20,
			`servicewright_http_accept_paused_total{entrypoint="http"}`:                                             0,
		} {
			if v, ok := got[series]; !ok || v != want {
				t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
			}
		}
		if len(got) != 16 {
			t.Errorf("gathered %d series, want 16: %v", len(got), got)
		}
	})

	t.Run("a second server with the same name cannot register", func(t *testing.T) {
		_, err := New(Config{}, panicky(), WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
		if err == nil || !strings.Contains(err.Error(), "WithTelemetry") {
			t.Errorf("New = %v, want a WithRegisterer problem", err)
		}
		if _, err := New(Config{Name: "admin"}, panicky(), WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err != nil {
			t.Errorf("New with another name = %v", err)
		}
	})

	if err := x.drain(failAfter); err != nil {
		t.Errorf("Drain = %v", err)
	}
}

// gathered returns every series of g as `name{label="value",…}` (labels sorted by
// name) with its value: a counter's or gauge's value, a histogram's sample count.
// (prometheus/testutil would do, but it needs a module this one does not require.)
func gathered(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestTracing(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !trace.SpanContextFromContext(r.Context()).IsValid() {
			t.Error("handler's ctx carries no span")
		}
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("POST /orders/{id}/pay", func(w http.ResponseWriter, r *http.Request) {
		panic("card " + r.PathValue("id"))
	})
	x := run(t, Config{}, mux, WithTelemetry(entrypoint.Telemetry{TracerProvider: tp, Logger: zap.NewNop()}))

	t.Run("each admitted request is a server span named after its route", func(t *testing.T) {
		req, _ := http.NewRequest("GET", x.base+"/orders/7", nil)
		req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		resp, err := x.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		spans := rec.Ended()
		if len(spans) != 1 {
			t.Fatalf("recorded %d spans, want 1", len(spans))
		}
		sp := spans[0]
		if sp.Name() != "GET /orders/{id}" || sp.SpanKind() != trace.SpanKindServer {
			t.Errorf("span %q kind %v, want a server span GET /orders/{id}", sp.Name(), sp.SpanKind())
		}
		if got := sp.Parent().TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("parent trace = %s, want the incoming traceparent's", got)
		}
	})
	t.Run("a panicking handler's span has its route, 500 and an error status", func(t *testing.T) {
		resp, err := x.client.Post(x.base+"/orders/7/pay", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("status %d, want 500", resp.StatusCode)
		}
		spans := rec.Ended()
		sp := spans[len(spans)-1]
		attrs := map[string]string{}
		for _, kv := range sp.Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		if sp.Name() != "POST /orders/{id}/pay" || attrs["http.route"] != "/orders/{id}/pay" {
			t.Errorf("span %q route %q, want POST /orders/{id}/pay", sp.Name(), attrs["http.route"])
		}
		if attrs["http.response.status_code"] != "500" {
			t.Errorf("status attribute %q, want 500", attrs["http.response.status_code"])
		}
		if sp.Status().Code != codes.Error {
			t.Errorf("span status %v, want Error", sp.Status())
		}
		for _, ev := range sp.Events() {
			for _, kv := range ev.Attributes {
				if strings.Contains(kv.Value.String(), "card") {
					t.Errorf("the span carries the panic's text: %s=%s", kv.Key, kv.Value.String())
				}
			}
		}
	})
}
