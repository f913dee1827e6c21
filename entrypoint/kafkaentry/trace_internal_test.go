package kafkaentry

import (
	"context"
	"testing"

	"github.com/segmentio/kafka-go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkHandlingSpan measures what tracing adds to each handling: nothing but a
// nil check with a no-op provider (the default), a span with an SDK provider.
func BenchmarkHandlingSpan(b *testing.B) {
	for _, tc := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"noop", noop.NewTracerProvider()}, {"sdk-no-exporter", sdktrace.NewTracerProvider()}} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := New(Config{Brokers: []string{"127.0.0.1:9092"}, GroupID: "g", Topics: []string{"t"}},
				func(context.Context, kafka.Message) error { return nil }, WithTracerProvider(tc.tp))
			if err != nil {
				b.Fatal(err)
			}
			msg := &kafka.Message{Topic: "t", Partition: 3, Offset: 42, Headers: []kafka.Header{
				{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
			}}
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
