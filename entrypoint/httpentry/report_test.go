package httpentry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/testenv"
)

// extracts is a propagator that counts its Extract calls and propagates nothing.
type extracts struct {
	propagation.TextMapPropagator
	mu sync.Mutex
	n  int
}

func (e *extracts) Extract(ctx context.Context, _ propagation.TextMapCarrier) context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	return ctx
}

func (e *extracts) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

func TestPanicReports(t *testing.T) {
	t.Run("a handler panic reaches the Host's reporter with its stack, route and trace id", func(t *testing.T) {
		core, logs := observer.New(zap.ErrorLevel)
		rep := &testenv.Reports{}
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		defer tp.Shutdown(context.Background())
		prop := &extracts{TextMapPropagator: propagation.TraceContext{}}
		x := runWith(t, Config{}, panicky(), func(s *Server) {
			s.SetDefaults(entrypoint.Telemetry{Logger: zap.New(core), TracerProvider: tp, Propagator: prop, Reporter: rep})
		})
		x.mustGet("/panic", http.StatusInternalServerError)
		x.get("/abort")
		x.mustGet("/fine", http.StatusOK)

		errs, tags := rep.Get()
		if len(errs) != 1 {
			t.Fatalf("%d reports, want 1 (an aborted handler and a fine one are not reported): %v", len(errs), errs)
		}
		pe, ok := errors.AsType[*fault.PanicError](errs[0])
		if !ok || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "httpentry.panicky.func1") {
			t.Fatalf("report = %#v, want a *fault.PanicError of \"boom\" whose stack names the handler", errs[0])
		}
		ended := spans.Ended()
		if len(ended) == 0 {
			t.Fatal("no span")
		}
		traceID := ended[0].SpanContext().TraceID().String()
		want := map[string]string{fault.TagEntrypoint: "http", tagRoute: "GET /panic", tagMethod: "GET", fault.TagTraceID: traceID}
		for k, v := range want {
			if tags[0][k] != v {
				t.Errorf("tag %s = %q, want %q (tags %v)", k, tags[0][k], v, tags[0])
			}
		}
		line := logs.FilterMessage("http handler panicked").All()
		if len(line) != 1 || line[0].ContextMap()["trace_id"] != traceID {
			t.Errorf("the panic's log line does not carry the trace id %s: %v", traceID, line)
		}
		if prop.count() == 0 {
			t.Error("the Host's propagator was not used")
		}
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
	})

	t.Run("WithTelemetry's reporter and propagator win over the Host's", func(t *testing.T) {
		mine, host := &testenv.Reports{}, &testenv.Reports{}
		myProp, hostProp := &extracts{TextMapPropagator: propagation.TraceContext{}}, &extracts{TextMapPropagator: propagation.TraceContext{}}
		tp := sdktrace.NewTracerProvider()
		defer tp.Shutdown(context.Background())
		x := runWith(t, Config{}, panicky(), func(s *Server) {
			s.SetDefaults(entrypoint.Telemetry{Reporter: host, Propagator: hostProp})
		}, WithTelemetry(entrypoint.Telemetry{Reporter: mine, Propagator: myProp, TracerProvider: tp}))
		x.mustGet("/panic", http.StatusInternalServerError)
		m, _ := mine.Get()
		h, _ := host.Get()
		if len(m) != 1 || len(h) != 0 {
			t.Errorf("reports: %d to WithTelemetry's, %d to the Host's; want 1 and 0", len(m), len(h))
		}
		if myProp.count() != 1 || hostProp.count() != 0 {
			t.Errorf("extracts: %d by WithTelemetry's, %d by the Host's; want 1 and 0", myProp.count(), hostProp.count())
		}
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
	})

	t.Run("without tracing, the report has the route and no trace id", func(t *testing.T) {
		rep := &testenv.Reports{}
		x := run(t, Config{}, panicky(), WithTelemetry(entrypoint.Telemetry{Reporter: rep}))
		x.get("/late") // the 200 went out before the panic: the connection is cut
		_, tags := rep.Get()
		if len(tags) != 1 || tags[0][tagRoute] != "GET /late" || tags[0][fault.TagTraceID] != "" {
			t.Errorf("tags = %v", tags)
		}
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
	})
}
