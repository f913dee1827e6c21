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

// spanAttrs is the number of attributes of a handling span: messaging.system,
// messaging.operation.type, messaging.destination.name, messaging.consumer.group.name,
// messaging.destination.partition.id and the message's offset, in that order.
const spanAttrs = 6

// spanNames holds, per consumed topic, the name of its handling spans, "process
// <topic>"; made at New, read-only after.
func spanNames(topics []string) map[string]string {
	m := make(map[string]string, len(topics))
	for _, t := range topics {
		m[t] = spanName(t)
	}
	return m
}

func spanName(topic string) string { return "process " + topic }

// partitionSpans is what the handling spans of one partition run start with, made
// when the partition is opened: the span name, and the attributes of which only the
// offset changes from one message to the next. A partition handles one message at
// a time, so each of its spans is given the same array, which the span copies.
type partitionSpans struct {
	name  string
	attrs [spanAttrs]attribute.KeyValue
}

// newPartitionSpans returns the span start of topic's partition; the name is the
// one made at New for a consumed topic.
func (c *Consumer) newPartitionSpans(topic string, partition int) *partitionSpans {
	name, ok := c.spanNames[topic]
	if !ok { // not a consumed topic: never, but spans are not the place to fail
		name = spanName(topic)
	}
	return &partitionSpans{name: name, attrs: [spanAttrs]attribute.KeyValue{
		semconv.MessagingSystemKafka,
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingDestinationName(topic),
		semconv.MessagingConsumerGroupName(c.cfg.GroupID),
		semconv.MessagingDestinationPartitionID(strconv.Itoa(partition)),
		semconv.MessagingKafkaOffset(0), // the message's, set per span
	}}
}

// consumerSpan is the one start option of every handling span; the attributes
// follow only when the span records.
var consumerSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}

// startHandling continues the trace msg carries in its headers with a consumer span
// under p's handlers' ctx, and returns the handler's ctx. The work is the least the
// span needs: a message without headers has no trace context to read; the span's
// name and all its attributes but the offset were made when the partition was
// opened (p.spans); and the attributes are given to the span only when the sampler
// kept it (span.IsRecording), in one call, from p.spans's array. A span that is not
// sampled costs its IDs and its place in the ctx, nothing else.
func (c *Consumer) startHandling(p partitionRun, msg *kafka.Message) (handling, partitionRun) {
	if c.tracer == nil {
		return handling{base: c.log}, p
	}
	ps := p.spans
	if ps == nil { // never from consumePartition
		ps = c.newPartitionSpans(msg.Topic, msg.Partition)
	}
	ctx := p.handlers
	if len(msg.Headers) > 0 {
		ctx = c.propagator.Extract(ctx, kafkakit.HeaderCarrier{Headers: &msg.Headers})
	}
	ctx, span := c.tracer.Start(ctx, ps.name, consumerSpan...)
	if span.IsRecording() {
		ps.attrs[spanAttrs-1] = semconv.MessagingKafkaOffset(int(msg.Offset))
		span.SetAttributes(ps.attrs[:]...)
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
