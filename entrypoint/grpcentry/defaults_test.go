package grpcentry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
)

func TestSetDefaults(t *testing.T) {
	t.Run("the Host's registry and tracer provider are used when no option gave one", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		defer tp.Shutdown(context.Background())
		x := runWith(t, func(s *grpcentry.Server) {
			s.SetDefaults(entrypoint.Telemetry{Registerer: reg, TracerProvider: tp})
		})
		if _, err := x.client.EmptyCall(ctxT(t), &testpb.Empty{}); err != nil {
			t.Fatal(err)
		}
		if n, err := testutil.GatherAndCount(reg, "servicewright_grpc_requests_total"); err != nil || n == 0 {
			t.Errorf("requests_total series: %d, %v", n, err)
		}
		if len(rec.Started()) != 1 {
			t.Errorf("%d spans started, want 1", len(rec.Started()))
		}
	})
	t.Run("an option wins over the Host's", func(t *testing.T) {
		own, hostReg := prometheus.NewRegistry(), prometheus.NewRegistry()
		x := runWith(t, func(s *grpcentry.Server) {
			s.SetDefaults(entrypoint.Telemetry{Registerer: hostReg})
		}, grpcentry.WithTelemetry(entrypoint.Telemetry{Registerer: own}))
		if _, err := x.client.EmptyCall(ctxT(t), &testpb.Empty{}); err != nil {
			t.Fatal(err)
		}
		if n, _ := testutil.GatherAndCount(hostReg); n != 0 {
			t.Errorf("the Host's registry got %d series", n)
		}
		if n, _ := testutil.GatherAndCount(own, "servicewright_grpc_requests_total"); n == 0 {
			t.Error("the option's registry got nothing")
		}
	})
	t.Run("a registration that fails is SetDefaults' error", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		if _, err := grpcentry.New(grpcentry.Config{}, register, grpcentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err != nil {
			t.Fatal(err)
		}
		s, err := grpcentry.New(grpcentry.Config{Addr: "127.0.0.1:0"}, register)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetDefaults(entrypoint.Telemetry{Registerer: reg}); err == nil || !strings.Contains(err.Error(), "metrics") {
			t.Fatalf("SetDefaults = %v, want the registration's error", err)
		}
	})
}

func runWith(t *testing.T, before func(*grpcentry.Server), opts ...grpcentry.Option) *running {
	t.Helper()
	return runHooked(t, grpcentry.Config{}, &service{}, before, opts...)
}
