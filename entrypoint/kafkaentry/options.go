package kafkaentry

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
)

// An Option configures a Consumer.
type Option func(*options)

type options struct {
	log        *zap.Logger
	registerer prometheus.Registerer
	dialer     *kafka.Dialer
	dlq        MessageWriter
}

// MessageWriter writes messages to Kafka; *kafka.Writer is one. The dead-letter path
// uses it with messages that carry their own topic.
type MessageWriter interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// WithLogger sets the logger for lifecycle events, handler failures and kafka-go's own
// messages (at debug and warn level). The default discards everything.
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
// servicewright_kafka_paused{topic,partition,cause} (1 while a partition is paused on
// an outage) and servicewright_kafka_in_flight, each with the constant label entrypoint=Name. Without
// it no metric is kept.
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
// writer of the consumer's own, e.g. to share the service's producer. The consumer
// does not close w. It is used only with OnFailure: DeadLetter(topic).
func WithDeadLetterWriter(w MessageWriter) Option {
	return func(o *options) { o.dlq = w }
}
