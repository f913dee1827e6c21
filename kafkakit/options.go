package kafkakit

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// An Option configures a Producer or a Check.
type Option func(*options)

type options struct {
	dialer         *kafka.Dialer
	tracerProvider trace.TracerProvider
	propagator     propagation.TextMapPropagator
	registerer     prometheus.Registerer
}

func newOptions(opts []Option) options {
	o := options{
		tracerProvider: noop.NewTracerProvider(),
		propagator:     W3C(),
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// W3C is the default propagator: W3C trace context and baggage, as the HTTP
// entrypoint uses.
func W3C() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// WithDialer sets the dialer (TLS, SASL, client ID) of every connection. Its
// Timeout is capped by the producer's WriteTimeout.
func WithDialer(d *kafka.Dialer) Option {
	return func(o *options) {
		if d != nil {
			o.dialer = d
		}
	}
}

// WithTracerProvider makes the producer start a span per write with tp. The default
// starts none (a no-op provider), and the caller's span context is still injected.
// A nil tp is ignored.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) {
		if tp != nil {
			o.tracerProvider = tp
		}
	}
}

// WithPropagator sets how the trace context is written into message headers.
// Default W3C(); pass otel.GetTextMapPropagator() to follow the global one. A nil
// p is ignored.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(o *options) {
		if p != nil {
			o.propagator = p
		}
	}
}

// WithRegisterer makes a Producer keep its metrics in r:
// servicewright_kafka_producer_writes_total and _messages_total by topic and outcome
// (ok, timeout, error), _write_duration_seconds (call to acknowledgement) and
// _batch_messages (messages per WriteMessages call), each by topic. Producers given
// the same r share the series. A nil r is ignored; a Check ignores the option.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(o *options) {
		if r != nil {
			o.registerer = r
		}
	}
}
