package kafkakit

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/servicewright/servicewright/entrypoint"
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
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.tracerProvider == nil {
		o.tracerProvider = noop.NewTracerProvider()
	}
	if o.propagator == nil {
		o.propagator = w3c()
	}
	return o
}

// w3c is the default propagator: W3C trace context and baggage, as the HTTP
// entrypoint uses.
func w3c() propagation.TextMapPropagator {
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

// WithTelemetry gives the producer its tracer provider, propagator and metrics
// registry; a nil field keeps the default, and the logger and reporter are not
// used. Given twice, the later option's non-nil fields win.
//
//   - TracerProvider: a span per write. None: no span (the caller's span context
//     is still injected).
//   - Propagator: how the trace context is written into message headers. None:
//     W3C trace context and baggage; pass otel.GetTextMapPropagator() to follow
//     the global one.
//   - Registerer: servicewright_kafka_producer_writes_total and _messages_total by
//     topic and outcome (ok, timeout, error), _write_duration_seconds (call to
//     acknowledgement) and _batch_messages (messages per WriteMessages call), each
//     by topic. Producers given the same registry share the series. None: no
//     metric is kept. A Check ignores it.
func WithTelemetry(t entrypoint.Telemetry) Option {
	return func(o *options) {
		if t.TracerProvider != nil {
			o.tracerProvider = t.TracerProvider
		}
		if t.Propagator != nil {
			o.propagator = t.Propagator
		}
		if t.Registerer != nil {
			o.registerer = t.Registerer
		}
	}
}
