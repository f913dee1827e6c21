package kafkaentry

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

func TestNoopTracerIsSkipped(t *testing.T) {
	if newTracer(noop.NewTracerProvider()) != nil {
		t.Error("a no-op provider made a tracer; every handling would pay for it")
	}
	if newTracer(sdktrace.NewTracerProvider()) == nil {
		t.Error("an SDK provider made no tracer")
	}
}
