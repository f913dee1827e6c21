package kafkakit

import (
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
)

// HeaderCarrier adapts a message's headers to OpenTelemetry propagation: Inject
// writes the trace context into them (replacing headers of the same keys), Extract
// reads it back.
type HeaderCarrier struct {
	Headers *[]kafka.Header
}

var _ propagation.TextMapCarrier = HeaderCarrier{}

// Get returns the value of the first header named key, or "".
func (c HeaderCarrier) Get(key string) string {
	for _, h := range *c.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Set replaces the headers named key with one of value.
func (c HeaderCarrier) Set(key, value string) {
	// A new slice: the caller's may share its backing array with other messages.
	hs := *c.Headers
	out := make([]kafka.Header, 0, len(hs)+1)
	for _, h := range hs {
		if h.Key != key {
			out = append(out, h)
		}
	}
	*c.Headers = append(out, kafka.Header{Key: key, Value: []byte(value)})
}

// Keys lists the header names.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, len(*c.Headers))
	for i, h := range *c.Headers {
		keys[i] = h.Key
	}
	return keys
}
