package kafkaentry

import (
	"context"
	"testing"

	"github.com/segmentio/kafka-go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkHandlingSpan measures what tracing adds to each handling: nothing but a
// nil check with a no-op provider (the default), a span with an SDK provider, with
// no span processor or a batch processor whose exporter discards the spans; and
// with a 1% ratio sampler, a message that carries no trace context.
func BenchmarkHandlingSpan(b *testing.B) {
	batch := func(s sdktrace.Sampler) trace.TracerProvider {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(s), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return tp
	}
	for _, tc := range []struct {
		name     string
		tp       trace.TracerProvider
		untraced bool // the message carries no trace context
	}{
		{"noop", noop.NewTracerProvider(), false},
		{"sdk-no-exporter", sdktrace.NewTracerProvider(), false},
		{"sdk-batch", batch(sdktrace.AlwaysSample()), false},
		{"sdk-batch-1pct", batch(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))), true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := New(Config{Brokers: []string{"127.0.0.1:9092"}, GroupID: "g", Topics: []string{"t"}},
				func(context.Context, kafka.Message) error { return nil }, WithTracerProvider(tc.tp))
			if err != nil {
				b.Fatal(err)
			}
			msg := &kafka.Message{Topic: "t", Partition: 3, Offset: 42, Headers: []kafka.Header{
				{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
			}}
			if tc.untraced {
				msg.Headers = nil
			}
			p := partitionRun{handlers: context.Background()}
			b.ReportAllocs()
			for b.Loop() {
				h, _ := c.startHandling(p, msg)
				h.end("handled", nil)
			}
		})
	}
}

func TestNoopTracerIsSkipped(t *testing.T) {
	if newTracer(noop.NewTracerProvider()) != nil {
		t.Error("a no-op provider made a tracer; every handling would pay for it")
	}
	if newTracer(sdktrace.NewTracerProvider()) == nil {
		t.Error("an SDK provider made no tracer")
	}
}
