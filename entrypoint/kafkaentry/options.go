package kafkaentry

import (
	"context"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint"
)

// An Option configures a Consumer.
type Option func(*options)

type options struct {
	tel    entrypoint.Telemetry
	dialer *kafka.Dialer
	dlq    messageWriter // the dead-letter writer; only tests set it
}

// messageWriter writes messages to Kafka: the dead-letter producer, or a test's
// fake. The dead-letter path uses it with messages that carry their own topic.
type messageWriter interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// WithTelemetry gives the consumer its logger, metrics registry, tracer provider,
// propagator and error reporter; a nil field is taken from the Host (SetDefaults),
// and one neither gives is off. Given twice, the later option's fields win.
//
//   - Logger: lifecycle events, handler failures and kafka-go's own messages (at
//     debug and warn level). None: nothing is logged.
//   - Registerer: the counters
//     servicewright_kafka_messages_{consumed,handled,failed,dead_lettered}_total{topic}
//     and the gauges servicewright_kafka_committed_offset{topic,partition},
//     servicewright_kafka_paused{topic,cause} (how many of the topic's partitions an
//     outage holds, by the rule that saw it; every topic and cause is there at 0 from
//     the start) and servicewright_kafka_in_flight, each with the constant label
//     entrypoint=Name. None: no metric is kept. New returns a registration that
//     fails.
//   - TracerProvider: each handling runs inside a consumer span "process <topic>",
//     with the messaging attributes (system, destination, partition, offset,
//     consumer group), continuing the trace whose context the message carries in its
//     headers; retries, pauses and the dead-letter write are events of that span, and
//     a handling that did not end handled has the attribute
//     servicewright.kafka.outcome (released, dead_lettered or failed). The sampler
//     sees the span's kind and name; the attributes are made only for a span it
//     keeps. The handler's ctx holds the span. None: no span, at next to no cost.
//   - Propagator: how the trace context is read from message headers (and written
//     into the dead-letter producer's). None: W3C trace context and baggage.
//   - Reporter: each handler panic — once per message, at its first panicking
//     attempt, as the *fault.PanicError with the handler's stack — and each
//     dead-lettered message, tagged with the entrypoint, the message's "topic",
//     "partition" and "offset", the "group" and the trace id of the handling's
//     span (fault.TagEntrypoint, fault.TagTraceID). A message that stops the entrypoint
//     (OnFailure: StopEntrypoint) is reported by the Host, as the entrypoint's
//     failure. None: these are only logged.
func WithTelemetry(t entrypoint.Telemetry) Option {
	return func(o *options) { o.tel = t.Or(o.tel) }
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
