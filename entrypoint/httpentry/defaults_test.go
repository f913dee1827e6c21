package httpentry

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
)

func TestSetDefaults(t *testing.T) {
	t.Run("a Server built with no option logs, counts and traces with the Host's telemetry", func(t *testing.T) {
		core, logs := observer.New(zap.ErrorLevel)
		reg := prometheus.NewRegistry()
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		defer tp.Shutdown(context.Background())
		x := runWith(t, Config{}, panicky(), func(s *Server) {
			s.SetDefaults(entrypoint.Telemetry{Logger: zap.New(core), Registerer: reg, TracerProvider: tp})
		})
		if code, _, _ := x.get("/panic"); code != http.StatusInternalServerError {
			t.Fatalf("GET /panic = %d", code)
		}
		if n := logs.FilterMessage("http handler panicked").Len(); n != 1 {
			t.Errorf("%d panics logged through the Host's logger, want 1", n)
		}
		if got := gathered(t, reg)[`servicewright_http_panics_total{entrypoint="http"}`]; got != 1 {
			t.Errorf("panics_total on the Host's registry = %v, want 1", got)
		}
		if n := len(spans.Ended()); n != 1 {
			t.Errorf("%d spans through the Host's tracer provider, want 1", n)
		}
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
	})

	t.Run("an option wins over the Host's default", func(t *testing.T) {
		mine, mineLogs := observer.New(zap.ErrorLevel)
		host, hostLogs := observer.New(zap.ErrorLevel)
		myReg, hostReg := prometheus.NewRegistry(), prometheus.NewRegistry()
		x := runWith(t, Config{}, panicky(), func(s *Server) {
			s.SetDefaults(entrypoint.Telemetry{Logger: zap.New(host), Registerer: hostReg})
		}, WithTelemetry(entrypoint.Telemetry{Logger: zap.New(mine), Registerer: myReg}))
		x.get("/panic")
		if mineLogs.Len() != 1 || hostLogs.Len() != 0 {
			t.Errorf("logs: %d to WithTelemetry's logger, %d to the Host's; want 1 and 0", mineLogs.Len(), hostLogs.Len())
		}
		if n := len(gathered(t, hostReg)); n != 0 {
			t.Errorf("%d series on the Host's registry, want none", n)
		}
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
	})

	t.Run("a registration that fails is SetDefaults' error, and SetDefaults after Bind does nothing", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		if _, err := New(Config{}, panicky(), WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Addr: "127.0.0.1:0"}, panicky())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetDefaults(entrypoint.Telemetry{Registerer: reg}); err == nil || !strings.Contains(err.Error(), "already registered") {
			t.Fatalf("SetDefaults = %v, want the registration's failure", err)
		}

		s, err = New(Config{Addr: "127.0.0.1:0"}, panicky())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Bind(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := s.SetDefaults(entrypoint.Telemetry{Registerer: prometheus.NewRegistry()}); err != nil {
			t.Errorf("SetDefaults after Bind = %v, want nil", err)
		}
		if s.metrics != nil {
			t.Error("SetDefaults after Bind registered metrics")
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
}
