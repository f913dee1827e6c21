package kafkaentry

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
)

// An Option configures a Consumer.
type Option func(*options)

type options struct {
	log        *zap.Logger
	registerer prometheus.Registerer
	dialer     *kafka.Dialer
	dlq        MessageWriter
	propagator propagation.TextMapPropagator
	tracer     trace.TracerProvider
	reporter   fault.Reporter
}

// MessageWriter writes messages to Kafka; *kafkakit.Producer and *kafka.Writer are. The dead-letter path
// uses it with messages that carry their own topic.
type MessageWriter interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// WithLogger sets the logger for lifecycle events, handler failures and kafka-go's own
// messages (at debug and warn level). Without it the consumer logs through the
// logger its Host hands it (SetDefaults), and discards everything with neither.
func WithLogger(l *zap.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithRegisterer registers the consumer's metrics with r: the counters
// servicewright_kafka_messages_{consumed,handled,failed,dead_lettered}_total{topic}
// and the gauges servicewright_kafka_committed_offset{topic,partition},
// servicewright_kafka_paused{topic,cause} (how many of the topic's partitions an
// outage holds, by the rule that saw it; every topic and cause is there at 0 from the
// start) and servicewright_kafka_in_flight, each with the constant label entrypoint=Name. Without
// it the metrics go to the registry the consumer's Host hands it (SetDefaults), and
// none is kept with neither.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(o *options) { o.registerer = r }
}

// WithDialer sets the dialer for every connection the consumer opens: the group's,
// the partition readers', the checks of Bind and Health, and the dead-letter
// writer's (its TLS and SASL settings). Use it for TLS or SASL. Its Timeout is replaced by Config.DialTimeout.
func WithDialer(d *kafka.Dialer) Option {
	return func(o *options) {
		if d != nil {
			o.dialer = d
		}
	}
}

// WithDeadLetterWriter makes the dead-letter path write through w instead of a
// producer of the consumer's own (a kafkakit.Producer with the consumer's dialer and
// propagator). The consumer does not close w. It is used only with OnFailure:
// DeadLetter(topic). The write's ctx holds no span, so that the dead-letter message
// keeps the trace context it came with; a w that starts spans of its own (a
// kafkakit.Producer given WithTracerProvider) writes its span's context instead.
func WithDeadLetterWriter(w MessageWriter) Option {
	return func(o *options) { o.dlq = w }
}

// WithTracerProvider makes the consumer run each handling inside a consumer span of
// tp ("process <topic>", with the messaging attributes: system, destination,
// partition, offset, consumer group), continuing the trace whose context the message
// carries in its headers; retries, pauses and the dead-letter write are events of that
// span, and a handling that did not end handled has the attribute
// servicewright.kafka.outcome (released, dead_lettered or failed). The sampler sees
// the span's kind and name; the attributes are made only for a span it keeps, so an
// unsampled handling costs little more than its span context. The handler's ctx
// holds the span. Without it the consumer traces with the
// tracer provider its Host hands it (SetDefaults); with neither, with a no-op
// provider, which costs next to nothing. A nil tp is ignored.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) {
		if tp != nil {
			o.tracer = tp
		}
	}
}

// WithPropagator sets how the trace context is read from message headers (and
// written into the dead-letter producer's). Without it the consumer uses the
// propagator its Host hands it (SetDefaults), and kafkakit.W3C() with neither; pass
// otel.GetTextMapPropagator() to follow the global one. A nil p is ignored.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(o *options) {
		if p != nil {
			o.propagator = p
		}
	}
}
