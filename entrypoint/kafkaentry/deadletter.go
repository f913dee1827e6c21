package kafkaentry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"
	"github.com/servicewright/servicewright/fault"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// The headers added to a dead-lettered message, as DeadLetterInfo documents them.
// Headers of the original message with these keys are replaced; all others are kept.
const (
	headerTopic     = "x-original-topic"
	headerPartition = "x-original-partition"
	headerOffset    = "x-original-offset"
	headerGroup     = "x-consumer-group"
	headerAttempts  = "x-attempts"
	headerErrorType = "x-error-type"
	headerError     = "x-error"
	headerFailedAt  = "x-failed-at"
)

// maxErrorHeaderBytes bounds the x-error value, so that a huge error message
// cannot make the dead-letter record too large to produce.
const maxErrorHeaderBytes = 1024

// DeadLetterInfo is where a dead-lettered message came from and why it failed: what
// the consumer adds to it, as headers, when it writes it to the dead-letter topic
// (OnFailure: DeadLetter(topic)). A reader of that topic gets it with
// ParseDeadLetter; a reader in another language reads the headers named below. The
// message's key, value and other headers are the original's.
type DeadLetterInfo struct {
	Topic     string    // header x-original-topic: the topic the message came from
	Partition int       // header x-original-partition: its partition, in decimal
	Offset    int64     // header x-original-offset: its offset, in decimal
	Group     string    // header x-consumer-group: the group that gave up on it
	Attempts  int       // header x-attempts: how many times the handler was called, in decimal
	ErrorType string    // header x-error-type: "panic", "undecodable", "permanent", "timeout", "canceled" or the error's Go type
	Error     string    // header x-error: the error's message, cut to 1 KiB
	FailedAt  time.Time // header x-failed-at: when the consumer gave up, RFC 3339 in UTC
}

// ParseDeadLetter reads the DeadLetterInfo headers of a message read from a
// dead-letter topic. It reports false, with a zero DeadLetterInfo, when one of the
// eight headers is missing or does not parse: the message was not dead-lettered by
// this package.
func ParseDeadLetter(msg kafka.Message) (DeadLetterInfo, bool) {
	var (
		d    DeadLetterInfo
		seen uint8 // one bit per header
		bad  bool
	)
	for _, h := range msg.Headers {
		var err error
		switch v := string(h.Value); h.Key {
		case headerTopic:
			d.Topic, seen = v, seen|1<<0
		case headerPartition:
			d.Partition, err = strconv.Atoi(v)
			seen |= 1 << 1
		case headerOffset:
			d.Offset, err = strconv.ParseInt(v, 10, 64)
			seen |= 1 << 2
		case headerGroup:
			d.Group, seen = v, seen|1<<3
		case headerAttempts:
			d.Attempts, err = strconv.Atoi(v)
			seen |= 1 << 4
		case headerErrorType:
			d.ErrorType, seen = v, seen|1<<5
		case headerError:
			d.Error, seen = v, seen|1<<6
		case headerFailedAt:
			d.FailedAt, err = time.Parse(time.RFC3339Nano, v)
			seen |= 1 << 7
		}
		bad = bad || err != nil
	}
	if bad || seen != 0xff {
		return DeadLetterInfo{}, false
	}
	return d, true
}

// deadLetterMessage builds the dead-letter record for msg: same key, value and
// headers, plus the DeadLetterInfo headers.
func deadLetterMessage(topic, group string, msg *kafka.Message, cause error, attempts int, now time.Time) kafka.Message {
	ours := []kafka.Header{
		{Key: headerTopic, Value: []byte(msg.Topic)},
		{Key: headerPartition, Value: strconv.AppendInt(nil, int64(msg.Partition), 10)},
		{Key: headerOffset, Value: strconv.AppendInt(nil, msg.Offset, 10)},
		{Key: headerGroup, Value: []byte(group)},
		{Key: headerAttempts, Value: strconv.AppendInt(nil, int64(attempts), 10)},
		{Key: headerErrorType, Value: []byte(errorType(cause))},
		{Key: headerError, Value: []byte(truncate(cause.Error(), maxErrorHeaderBytes))},
		{Key: headerFailedAt, Value: now.UTC().AppendFormat(nil, time.RFC3339Nano)},
	}
	headers := make([]kafka.Header, 0, len(msg.Headers)+len(ours))
	for _, h := range msg.Headers {
		if !slices.ContainsFunc(ours, func(o kafka.Header) bool { return o.Key == h.Key }) {
			headers = append(headers, h)
		}
	}
	return kafka.Message{Topic: topic, Key: msg.Key, Value: msg.Value, Headers: append(headers, ours...)}
}

// errorType names the kind of a handler failure without its message: a class the
// package knows, or the error's Go type when that says more than "an error".
func errorType(err error) string {
	if _, ok := errors.AsType[*fault.PanicError](err); ok {
		return "panic"
	}
	switch {
	case errors.Is(err, ErrUndecodable):
		return "undecodable"
	case fault.IsPermanent(err):
		return "permanent"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	// The first type along the chain that says more than "an error" (fmt.Errorf's
	// wrappers and the markers of this package say nothing).
	for e := err; e != nil; {
		switch t := fmt.Sprintf("%T", e); t {
		case "*errors.errorString", "*fmt.wrapError", "*kafkaentry.classified":
			u, ok := e.(interface{ Unwrap() error })
			if !ok {
				return "error"
			}
			e = u.Unwrap()
		case "*fmt.wrapErrors", "*errors.joinError":
			return "error"
		default:
			return t
		}
	}
	return "error"
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// deadLetter writes msg to the dead-letter topic, retrying a failed write on the
// retry schedule for as long as it takes, and marks the message done once written.
// It reports false when the message was given up on instead: Stop cut the write, or
// the partition's intake ended (a drain, a revocation) during a wait between writes. A message is never committed past
// without being written.
func (c *Consumer) deadLetter(h handling, p partitionRun, msg *kafka.Message, cause error, attempts int) bool {
	// Without the handling's span, so that the dead-letter message keeps the trace
	// context it came with.
	ctx := trace.ContextWithSpanContext(p.handlers, trace.SpanContext{})
	dm := deadLetterMessage(c.cfg.OnFailure.topic, c.cfg.GroupID, msg, cause, attempts, time.Now())
	b := c.newBackoff()
	for {
		err := c.dlq.WriteMessages(ctx, dm)
		if err == nil {
			c.stats.deadLettered.Add(1)
			if tm := c.metrics.topic(msg.Topic); tm != nil {
				tm.deadLettered.Inc()
			}
			h.event("dead_lettered", attribute.String("dead_letter_topic", dm.Topic), attribute.Int("attempts", attempts))
			h.log().Warn("message dead-lettered", msgFields(msg, zap.String("dead_letter_topic", dm.Topic),
				zap.Int("attempts", attempts), zap.String("error_type", errorType(cause)), zap.Error(cause))...)
			c.reportDeadLettered(h, msg, dm.Topic, cause, attempts)
			c.marked(p, msg)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		next := b.Next()
		h.event("dead_letter_failed", attribute.String("error.type", errorType(err)))
		h.log().Error("dead-letter write failed; retrying", msgFields(msg, zap.String("dead_letter_topic", dm.Topic),
			zap.Error(err), zap.Duration("retry_in", next))...)
		if !c.pause(p, next) {
			return false
		}
	}
}
