package kafkaentry

import (
	"strconv"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/kafkakit"
)

// instrumentation names the consumer's tracer.
const instrumentation = "github.com/servicewright/servicewright/entrypoint/kafkaentry"

// newTracer returns the tracer of tp, or nil for a no-op provider: then no handling
// pays for a span, nor for reading the trace context from the headers.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if _, ok := tp.(noop.TracerProvider); ok || tp == nil {
		return nil
	}
	return tp.Tracer(instrumentation)
}

// handling is what one message's handling carries besides the message: its span
// (nil without tracing) and the consumer's logger.
type handling struct {
	span trace.Span
	base *zap.Logger
}

// log is the logger of the handling's lines: with trace_id and span_id when traced.
// It is made only when a line is logged, which the happy path never does.
func (h handling) log() *zap.Logger {
	if h.span == nil {
		return h.base
	}
	sc := h.span.SpanContext()
	if !sc.IsValid() {
		return h.base
	}
	return h.base.With(zap.String("trace_id", sc.TraceID().String()), zap.String("span_id", sc.SpanID().String()))
}

// startHandling continues the trace msg carries in its headers with a consumer span
// under p's handlers' ctx, and returns the handler's ctx.
func (c *Consumer) startHandling(p partitionRun, msg *kafka.Message) (handling, partitionRun) {
	if c.tracer == nil {
		return handling{base: c.log}, p
	}
	ctx := c.opts.propagator.Extract(p.handlers, kafkakit.HeaderCarrier{Headers: &msg.Headers})
	ctx, span := c.tracer.Start(ctx, "process "+msg.Topic, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			semconv.MessagingSystemKafka,
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingDestinationName(msg.Topic),
			semconv.MessagingDestinationPartitionID(strconv.Itoa(msg.Partition)),
			semconv.MessagingKafkaOffset(int(msg.Offset)),
			semconv.MessagingConsumerGroupName(c.cfg.GroupID),
		))
	p.handlers = ctx
	return handling{span: span, base: c.log}, p
}

// event records an event on the handling's span, if any.
func (h handling) event(name string, attrs ...attribute.KeyValue) {
	if h.span != nil {
		h.span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// end ends the span with the handling's outcome: err nil for a message handled or
// dead-lettered, the last error otherwise.
func (h handling) end(outcome string, err error) {
	if h.span == nil {
		return
	}
	h.span.SetAttributes(attribute.String("servicewright.kafka.outcome", outcome))
	if err != nil {
		h.span.RecordError(err)
		h.span.SetStatus(codes.Error, outcome)
	}
	h.span.End()
}
