package telemetry

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/servicewright/servicewright/fault"
)

var otelVars = []string{"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_PROPAGATORS", "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"}

// withOTelEnv clears the OTEL_* variables, then sets env, for the length of the test.
func withOTelEnv(t *testing.T, env map[string]string) Env {
	t.Helper()
	for _, k := range otelVars {
		t.Setenv(k, env[k])
	}
	var l fault.Problems
	e := FromEnv("orders", "i-1", osVars(), nil, &l)
	if err := l.Err(); err != nil {
		t.Fatalf("FromEnv: %v", err)
	}
	t.Cleanup(func() {
		if e.Spans != nil {
			_ = e.Spans.Shutdown(context.Background())
		}
		if e.Metrics != nil {
			_ = e.Metrics.Shutdown(context.Background())
		}
	})
	return e
}

func TestFromEnv(t *testing.T) {
	t.Run("nothing set: nothing exported, W3C propagation", func(t *testing.T) {
		e := withOTelEnv(t, nil)
		if e.Spans != nil || e.Metrics != nil {
			t.Errorf("exporters %v %v, want none", e.Spans, e.Metrics)
		}
		if f := e.Propagator.Fields(); !slices.Contains(f, "traceparent") || !slices.Contains(f, "baggage") {
			t.Errorf("propagator fields %v, want tracecontext and baggage", f)
		}
	})

	t.Run("OTEL_SDK_DISABLED asks the exporter for nothing", func(t *testing.T) {
		withOTelEnv(t, map[string]string{"OTEL_SDK_DISABLED": "true"})
		var l fault.Problems
		called := false
		FromEnv("orders", "i-1", osVars(), func(context.Context, *fault.Problems) (sdktrace.SpanExporter, sdkmetric.Reader) {
			called = true
			return nil, nil
		}, &l)
		if called {
			t.Error("the exporter was asked with OTEL_SDK_DISABLED=true")
		}
	})

	t.Run("the resource: OTEL_SERVICE_NAME wins, the instance and OTEL_RESOURCE_ATTRIBUTES are kept", func(t *testing.T) {
		e := withOTelEnv(t, map[string]string{"OTEL_SERVICE_NAME": "orders-eu",
			"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=prod"})
		got := map[string]string{}
		for _, kv := range e.Resource.Attributes() {
			got[string(kv.Key)] = kv.Value.String()
		}
		for k, v := range map[string]string{"service.name": "orders-eu", "service.instance.id": "i-1",
			"deployment.environment.name": "prod"} {
			if got[k] != v {
				t.Errorf("%s = %q, want %q (resource %v)", k, got[k], v, got)
			}
		}
	})

	t.Run("a bad propagator is a problem naming its variable", func(t *testing.T) {
		for _, k := range otelVars {
			t.Setenv(k, "")
		}
		t.Setenv("OTEL_PROPAGATORS", "carrier-pigeon")
		var l fault.Problems
		FromEnv("orders", "i-1", osVars(), nil, &l)
		ce, ok := errors.AsType[*fault.ConfigError](l.Err())
		if !ok || ce.Problems[0].Variable != "OTEL_PROPAGATORS" {
			t.Errorf("%v, want a problem naming OTEL_PROPAGATORS", l.Err())
		}
	})
}

// osVars reads Vars from the process environment, as the Host does.
func osVars() Vars {
	return Vars{Propagators: os.Getenv("OTEL_PROPAGATORS"), SDKDisabled: os.Getenv("OTEL_SDK_DISABLED")}
}
