package kafkaentry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
)

var _ entrypoint.DefaultsUser = (*Consumer)(nil)

// Tag keys of the consumer's reports, beside fault.TagEntrypoint and
// fault.TagTraceID.
const (
	tagTopic     = "topic"     // the message's topic
	tagPartition = "partition" // its partition, in decimal
	tagOffset    = "offset"    // its offset, in decimal
	tagGroup     = "group"     // the consumer group
)

// SetDefaults takes the Host's telemetry for each field WithTelemetry left nil (see
// WithTelemetry for what each does). It returns a metrics registration that fails
// (the Host refuses the entrypoint then), and does nothing once the consumer is
// bound.
func (c *Consumer) SetDefaults(t entrypoint.Telemetry) error { return c.base.SetDefaults(t) }

// useTelemetry takes t, called by New with what the options gave and by
// SetDefaults with that merged with the Host's: a nil logger discards, a nil tracer
// provider traces nothing, a nil propagator is W3C trace context and baggage, and
// the metrics are registered once, with the first registry given.
func (c *Consumer) useTelemetry(t entrypoint.Telemetry) error {
	log, propagator := t.Logger, t.Propagator
	if log == nil {
		log = zap.NewNop()
	}
	if propagator == nil {
		propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	c.log = log.With(zap.String("entrypoint", c.cfg.Name))
	c.tracer = newTracer(t.TracerProvider)
	c.propagator, c.reporter = propagator, t.Reporter
	if c.metrics == nil && t.Registerer != nil {
		m, err := newMetrics(t.Registerer, c.cfg.Name, c.cfg.Topics, func() float64 { return float64(c.gate.InFlight()) })
		if err != nil {
			return fmt.Errorf("kafkaentry %q: metrics: %w", c.cfg.Name, err)
		}
		c.metrics = m
	}
	return nil
}

// reportPanic sends err to the error reporter when it is a handler's panic and
// none was reported for this message yet (*reported says; reportPanic sets it).
func (c *Consumer) reportPanic(h handling, msg *kafka.Message, err error, attempt int, reported *bool) {
	if c.reporter == nil || *reported {
		return
	}
	if _, ok := errors.AsType[*fault.PanicError](err); !ok {
		return
	}
	*reported = true
	tags := c.reportTags(h, msg)
	tags["attempt"] = strconv.Itoa(attempt)
	c.reporter.Report(h.context(), err, tags)
}

// reportDeadLettered sends the failure of a message written to the dead-letter
// topic to the error reporter. The error wraps cause: a panic's stack is shown.
func (c *Consumer) reportDeadLettered(h handling, msg *kafka.Message, topic string, cause error, attempts int) {
	if c.reporter == nil {
		return
	}
	err := fmt.Errorf("kafkaentry %q: message %s/%d@%d dead-lettered to %s after %d attempt(s): %w",
		c.cfg.Name, msg.Topic, msg.Partition, msg.Offset, topic, attempts, cause)
	tags := c.reportTags(h, msg)
	tags["dead_letter_topic"] = topic
	tags["attempts"] = strconv.Itoa(attempts)
	c.reporter.Report(h.context(), err, tags)
}

func (c *Consumer) reportTags(h handling, msg *kafka.Message) map[string]string {
	tags := map[string]string{
		fault.TagEntrypoint: c.cfg.Name,
		tagTopic:            msg.Topic,
		tagPartition:        strconv.Itoa(msg.Partition),
		tagOffset:           strconv.FormatInt(msg.Offset, 10),
		tagGroup:            c.cfg.GroupID,
	}
	if h.span != nil {
		if sc := h.span.SpanContext(); sc.IsValid() {
			tags[fault.TagTraceID] = sc.TraceID().String()
			tags[fault.TagSpanID] = sc.SpanID().String()
		}
	}
	return tags
}

// context is a ctx holding the handling's span, if any, for a report.
func (h handling) context() context.Context {
	if h.span == nil {
		return context.Background()
	}
	return trace.ContextWithSpan(context.Background(), h.span)
}

// kafkaNoise tells kafka-go's lines the bridge to zap drops: "no messages received
// from kafka within the allocated time", logged for every fetch of an idle
// partition that found nothing within MaxWait — the normal state of a quiet topic,
// several lines a second.
func kafkaNoise(format string) bool {
	return strings.HasPrefix(format, "no messages received from kafka within the allocated time")
}
