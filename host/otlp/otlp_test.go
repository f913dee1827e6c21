package otlp

import (
	"context"
	"errors"
	"fmt"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/fault"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var otelVars = []string{"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"}

// exports is what export built.
type exports struct {
	Spans   sdktrace.SpanExporter
	Metrics sdkmetric.Reader
}

// exportWith clears the OTEL_* variables, sets vars, and exports, for the length of the test.
func exportWith(t *testing.T, vars map[string]string) (exports, error) {
	t.Helper()
	for _, k := range otelVars {
		t.Setenv(k, vars[k])
	}
	var l fault.Problems
	var x exports
	x.Spans, x.Metrics = export(context.Background(), &l)
	t.Cleanup(func() {
		if x.Spans != nil {
			_ = x.Spans.Shutdown(context.Background())
		}
		if x.Metrics != nil {
			_ = x.Metrics.Shutdown(context.Background())
		}
	})
	return x, l.Err()
}

func TestExport(t *testing.T) {
	t.Run("nothing set: nothing exported (no OTLP on localhost by default)", func(t *testing.T) {
		if x, err := exportWith(t, nil); err != nil || x.Spans != nil || x.Metrics != nil {
			t.Errorf("exports %+v, %v; want none", x, err)
		}
	})

	t.Run("an endpoint alone turns the OTLP exporter on", func(t *testing.T) {
		x, err := exportWith(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
		if err != nil || fmt.Sprintf("%T", x.Spans) != "*otlptrace.Exporter" {
			t.Errorf("spans %T, %v; want the OTLP exporter", x.Spans, err)
		}
	})

	t.Run("none exports nothing", func(t *testing.T) {
		x, err := exportWith(t, map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
		if err != nil || x.Spans != nil {
			t.Errorf("spans %v, %v; want none", x.Spans, err)
		}
	})

	t.Run("a bad value is a problem naming its variable", func(t *testing.T) {
		for v, field := range map[[2]string]string{
			{"OTEL_TRACES_EXPORTER", "carrier-pigeon"}:        "OTEL_TRACES_EXPORTER",
			{"OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon"}: "OTEL_EXPORTER_OTLP_PROTOCOL",
			{"OTEL_METRICS_EXPORTER", "carrier-pigeon"}:       "OTEL_METRICS_EXPORTER",
		} {
			_, err := exportWith(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", v[0]: v[1]})
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || ce.Problems[0].Variable != field {
				t.Errorf("%s=%s: %v, want a problem naming %s", v[0], v[1], err, field)
			}
		}
	})
}
