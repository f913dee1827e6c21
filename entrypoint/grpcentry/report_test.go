package grpcentry_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/testenv"
)

// extracts is a propagator that counts its Extract calls.
type extracts struct {
	propagation.TextMapPropagator
	mu sync.Mutex
	n  int
}

func (e *extracts) Extract(ctx context.Context, c propagation.TextMapCarrier) context.Context {
	e.mu.Lock()
	e.n++
	e.mu.Unlock()
	return e.TextMapPropagator.Extract(ctx, c)
}

func (e *extracts) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

func TestPanicReports(t *testing.T) {
	boom := func(context.Context) error { panic("boom") }

	t.Run("a handler panic reaches the Host's reporter with its stack, method and trace id", func(t *testing.T) {
		rep := &testenv.Reports{}
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		defer tp.Shutdown(context.Background())
		prop := &extracts{TextMapPropagator: propagation.TraceContext{}}
		x := runHooked(t, grpcentry.Config{}, &service{unary: boom}, func(s *grpcentry.Server) {
			s.SetDefaults(entrypoint.Telemetry{Reporter: rep, TracerProvider: tp, Propagator: prop})
		})
		if _, err := x.client.UnaryCall(ctxT(t), &testpb.SimpleRequest{}); status.Code(err) != codes.Internal {
			t.Fatalf("RPC = %v, want INTERNAL", err)
		}
		errs, tags := rep.Get()
		if len(errs) != 1 {
			t.Fatalf("%d reports, want 1", len(errs))
		}
		pe, ok := errors.AsType[*fault.PanicError](errs[0])
		if !ok || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "TestPanicReports") {
			t.Errorf("report = %v, want the handler's *fault.PanicError with its stack", errs[0])
		}
		// The interceptor ends the server span before the answer leaves.
		spans := rec.Ended()
		if len(spans) != 1 {
			t.Fatalf("%d spans, want 1", len(spans))
		}
		want := map[string]string{fault.TagEntrypoint: "grpc", "method": "/grpc.testing.TestService/UnaryCall",
			fault.TagTraceID: spans[0].SpanContext().TraceID().String()}
		for k, v := range want {
			if tags[0][k] != v {
				t.Errorf("tag %s = %q, want %q", k, tags[0][k], v)
			}
		}
		if prop.count() == 0 {
			t.Error("the Host's propagator was not used")
		}
	})

	t.Run("WithTelemetry's reporter and propagator win over the Host's", func(t *testing.T) {
		mine, host := &testenv.Reports{}, &testenv.Reports{}
		myProp, hostProp := &extracts{TextMapPropagator: propagation.TraceContext{}}, &extracts{TextMapPropagator: propagation.TraceContext{}}
		tp := sdktrace.NewTracerProvider()
		defer tp.Shutdown(context.Background())
		x := runHooked(t, grpcentry.Config{}, &service{unary: boom}, func(s *grpcentry.Server) {
			s.SetDefaults(entrypoint.Telemetry{Reporter: host, Propagator: hostProp, TracerProvider: tp})
		}, grpcentry.WithTelemetry(entrypoint.Telemetry{Reporter: mine, Propagator: myProp}))
		x.client.UnaryCall(ctxT(t), &testpb.SimpleRequest{})
		m, _ := mine.Get()
		h, _ := host.Get()
		if len(m) != 1 || len(h) != 0 {
			t.Errorf("reports: %d to WithTelemetry's, %d to the Host's; want 1 and 0", len(m), len(h))
		}
		if myProp.count() == 0 || hostProp.count() != 0 {
			t.Errorf("extracts: %d by WithTelemetry's, %d by the Host's", myProp.count(), hostProp.count())
		}
	})

	t.Run("the Host's propagator reaches a Server traced by WithTelemetry", func(t *testing.T) {
		hostProp := &extracts{TextMapPropagator: propagation.TraceContext{}}
		tp := sdktrace.NewTracerProvider()
		defer tp.Shutdown(context.Background())
		x := runHooked(t, grpcentry.Config{}, &service{}, func(s *grpcentry.Server) {
			s.SetDefaults(entrypoint.Telemetry{Propagator: hostProp})
		}, grpcentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
		if _, err := x.client.EmptyCall(ctxT(t), &testpb.Empty{}); err != nil {
			t.Fatal(err)
		}
		if hostProp.count() == 0 {
			t.Error("the Host's propagator was not used")
		}
	})
}
