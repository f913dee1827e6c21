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

// spanStart is what the handling spans of one topic start with, made at New: the
// span's name and the attributes that are the same for every message.
type spanStart struct {
	name  string
	attrs []attribute.KeyValue // read-only; room for the message's own two
}

func newSpanStart(topic, group string) spanStart {
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs,
		semconv.MessagingSystemKafka,
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingDestinationName(topic),
		semconv.MessagingConsumerGroupName(group),
	)
	return spanStart{name: "process " + topic, attrs: attrs}
}

// consumerSpan is the one start option of every handling span; the attributes
// follow only when the span records.
var consumerSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}

// startHandling continues the trace msg carries in its headers with a consumer span
// under p's handlers' ctx, and returns the handler's ctx. The span's attributes are
// made only when the sampler kept it (span.IsRecording): a span that is not
// sampled costs its ID and context, not the attributes nobody would read.
func (c *Consumer) startHandling(p partitionRun, msg *kafka.Message) (handling, partitionRun) {
	if c.tracer == nil {
		return handling{base: c.log}, p
	}
	ss, ok := c.spanStarts[msg.Topic]
	if !ok { // not a consumed topic: never, but spans are not the place to fail
		ss = newSpanStart(msg.Topic, c.cfg.GroupID)
	}
	ctx := c.opts.propagator.Extract(p.handlers, kafkakit.HeaderCarrier{Headers: &msg.Headers})
	ctx, span := c.tracer.Start(ctx, ss.name, consumerSpan...)
	if span.IsRecording() {
		span.SetAttributes(append(ss.attrs[:len(ss.attrs):len(ss.attrs)],
			semconv.MessagingDestinationPartitionID(strconv.Itoa(msg.Partition)),
			semconv.MessagingKafkaOffset(int(msg.Offset)))...)
	}
	p.handlers = ctx
	return handling{span: span, base: c.log}, p
}

// event records an event on the handling's span, if any.
func (h handling) event(name string, attrs ...attribute.KeyValue) {
	if h.span != nil {
		h.span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// end ends the span with the handling's outcome: err nil for a message handled, the
// last error otherwise. The outcome is the span's servicewright.kafka.outcome
// attribute, except for a message handled, the common case, whose span has none.
func (h handling) end(outcome string, err error) {
	if h.span == nil {
		return
	}
	if outcome != outcomeHandled {
		h.span.SetAttributes(attribute.String("servicewright.kafka.outcome", outcome))
	}
	if err != nil {
		h.span.RecordError(err)
		h.span.SetStatus(codes.Error, outcome)
	}
	h.span.End()
}
