package kafkaentry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/wait"
)

// Defaults for the zero fields of an Outage; each field's doc states its own.
const (
	defaultOutageDistinctFailures = 3
	defaultOutageInitial          = 100 * time.Millisecond
	defaultOutageMax              = time.Second
	defaultOutageCheckTimeout     = 2 * time.Second
)

// Causes of a pause, as Pause.Cause and the cause label of servicewright_kafka_paused
// give them.
const (
	causeTransient        = "transient"         // the error was classified as transient
	causeDependencyCheck  = "dependency_check"  // Outage.Check failed
	causeDistinctFailures = "distinct_failures" // Outage.DistinctFailures messages failed in a row
)

// ErrPaused is wrapped by Health's error while a partition is paused on an outage.
var ErrPaused = errors.New("kafkaentry: consumption paused by a dependency outage")

// Outage says how the consumer tells a failure of the world (a dependency that is
// down) from a failure of the message (poison). Only poison is retried up to
// Retry.Attempts and then given to OnFailure. An outage pauses the message's
// partition instead: the message is retried, with a jittered backoff from Initial
// doubling up to Max, for as long as the outage lasts, while the member keeps its
// session and its assignment (no rebalance) and nothing past the message is committed.
// Attempts made during an outage do not count against Retry.Attempts.
//
// A failure is taken for an outage when, in order: it is not marked as the message's
// own (Poison, fault.Permanent, ErrUndecodable, a panic), and Classify says so (default
// IsTransient); or Check is set and fails; or DistinctFailures distinct messages
// failed in a row, across the consumer's partitions, with no success between. The
// last rule needs as many partitions failing at once (one partition tries one message
// at a time, and a message given up on as poison no longer counts), and it cannot tell
// an outage from as many poison messages failing together; give Check to be exact.
type Outage struct {
	// Classify reports whether a handler error is transient (about the world).
	// Default IsTransient.
	Classify func(error) bool

	// Check, when set, tells whether the handler's dependency is up, e.g. the
	// Health method of the readiness check of its database. An unclassified failure
	// while it fails is an outage; during a pause the handler is called again only
	// once it passes. Each call is bounded by CheckTimeout (default 2s).
	Check        func(ctx context.Context) error
	CheckTimeout time.Duration

	// DistinctFailures is how many distinct messages failing in a row make an
	// outage. Default 3; -1 turns the rule off.
	DistinctFailures int

	// Initial and Max shape the retry backoff during a pause: default 100ms and 1s,
	// so consumption resumes within Max of the dependency's return.
	Initial, Max time.Duration
}

// resolve fills in the defaults and records every problem in l, each under its
// field's name (Config.resolve prefixes them with "Outage").
func (o Outage) resolve(l *fault.Problems) Outage {
	if o.Classify == nil {
		o.Classify = IsTransient
	}
	o.CheckTimeout = cmp.Or(o.CheckTimeout, defaultOutageCheckTimeout)
	o.DistinctFailures = cmp.Or(o.DistinctFailures, defaultOutageDistinctFailures)
	o.Initial = cmp.Or(o.Initial, defaultOutageInitial)
	o.Max = cmp.Or(o.Max, max(defaultOutageMax, o.Initial))

	if o.DistinctFailures < -1 {
		l.Addf("DistinctFailures", "must be positive, or -1 to turn the rule off, got %d", o.DistinctFailures)
	}
	for _, f := range []struct {
		field string
		v     time.Duration
	}{{"CheckTimeout", o.CheckTimeout}, {"Initial", o.Initial}, {"Max", o.Max}} {
		if f.v < 0 {
			l.Addf(f.field, "must not be negative, got %v", f.v)
		}
	}
	if o.Initial > 0 && o.Max > 0 && o.Max < o.Initial {
		l.Addf("Max", "must be at least Outage.Initial (%v), got %v", o.Initial, o.Max)
	}
	return o
}

// Pause is one partition held on a message during an outage.
type Pause struct {
	Topic     string
	Partition int
	Offset    int64 // the message the partition is held on; nothing past it is committed

	// Cause is the rule that took the failure for an outage, as the cause label of
	// servicewright_kafka_paused gives it: "transient" (Outage.Classify said so),
	// "dependency_check" (Outage.Check failed) or "distinct_failures"
	// (Outage.DistinctFailures messages failed in a row).
	Cause string

	ErrorType string    // the last failure's kind, as DeadLetterInfo.ErrorType gives it (never its message)
	Since     time.Time // when the partition paused
	Attempts  int       // handler calls during the pause
}

func (p Pause) String() string {
	return fmt.Sprintf("%s/%d@%d %s (%s) for %s", p.Topic, p.Partition, p.Offset, p.Cause, p.ErrorType,
		time.Since(p.Since).Round(time.Millisecond))
}

// outageState is what the consumer knows of an outage: the paused partitions and the
// distinct messages that failed since the last success.
type outageState struct {
	nFailing atomic.Int32 // len(failing), read without the lock on the happy path
	mu       sync.Mutex
	paused   map[topicPartition]*Pause
	failing  map[msgID]struct{}
}

type msgID struct {
	topicPartition
	offset int64
}

// succeeded forgets the failures in a row. It costs one atomic load when there were
// none.
func (o *outageState) succeeded() {
	if o.nFailing.Load() == 0 {
		return
	}
	o.mu.Lock()
	clear(o.failing)
	o.nFailing.Store(0)
	o.mu.Unlock()
}

// failedDistinct records msg as failing and returns how many distinct messages failed
// in a row.
func (o *outageState) failedDistinct(msg *kafka.Message) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failing == nil {
		o.failing = make(map[msgID]struct{})
	}
	o.failing[msgID{topicPartition{msg.Topic, msg.Partition}, msg.Offset}] = struct{}{}
	o.nFailing.Store(int32(len(o.failing)))
	return len(o.failing)
}

// forget drops msg from the failing messages: it was given up on as poison, so it
// no longer says anything about the world.
func (o *outageState) forget(msg *kafka.Message) {
	if o.nFailing.Load() == 0 {
		return
	}
	o.mu.Lock()
	delete(o.failing, msgID{topicPartition{msg.Topic, msg.Partition}, msg.Offset})
	o.nFailing.Store(int32(len(o.failing)))
	o.mu.Unlock()
}

// outageCause says whether err, the failure of msg, is an outage, and which rule
// said so; "" means it is the message's own failure.
func (c *Consumer) outageCause(ctx context.Context, msg *kafka.Message, err error) string {
	o := &c.cfg.Outage
	if markedOwn(err) {
		return ""
	}
	if o.Classify(err) {
		return causeTransient
	}
	if o.Check != nil && c.checkDown(ctx) != nil {
		return causeDependencyCheck
	}
	if o.DistinctFailures > 0 && c.outage.failedDistinct(msg) >= o.DistinctFailures {
		return causeDistinctFailures
	}
	return ""
}

// checkDown runs Outage.Check within CheckTimeout.
func (c *Consumer) checkDown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Outage.CheckTimeout)
	defer cancel()
	return c.cfg.Outage.Check(ctx)
}

// paused records p's partition as held on msg by cause, and logs and counts the
// pause when it begins.
func (c *Consumer) paused(h handling, msg *kafka.Message, cause string, err error) {
	tp := topicPartition{msg.Topic, msg.Partition}
	c.outage.mu.Lock()
	if c.outage.paused == nil {
		c.outage.paused = make(map[topicPartition]*Pause)
	}
	ps := c.outage.paused[tp]
	begun := ps == nil
	if begun {
		ps = &Pause{Topic: msg.Topic, Partition: msg.Partition, Offset: msg.Offset, Since: time.Now()}
		c.outage.paused[tp] = ps
	}
	prevCause := ps.Cause
	ps.Cause, ps.ErrorType = cause, errorType(err)
	ps.Attempts++
	c.outage.mu.Unlock()
	if prevCause != cause {
		c.metrics.setPaused(msg.Topic, prevCause, cause)
	}
	if begun {
		h.log().Warn("dependency outage: partition paused on the message; retrying until it is back",
			msgFields(msg, zap.String("cause", cause), zap.String("error_type", errorType(err)), zap.Error(err))...)
		h.event("paused", attribute.String("cause", cause), attribute.String("error.type", errorType(err)))
	}
}

// resumed ends msg's partition's pause, if any, and logs how long it lasted.
func (c *Consumer) resumed(h handling, msg *kafka.Message, outcome string) {
	tp := topicPartition{msg.Topic, msg.Partition}
	c.outage.mu.Lock()
	ps := c.outage.paused[tp]
	delete(c.outage.paused, tp)
	c.outage.mu.Unlock()
	if ps == nil {
		return
	}
	c.metrics.setPaused(msg.Topic, ps.Cause, "")
	h.event("resumed", attribute.String("outcome", outcome), attribute.Int("attempts", ps.Attempts))
	h.log().Info("partition resumed", msgFields(msg, zap.String("outcome", outcome), zap.String("cause", ps.Cause),
		zap.Duration("paused_for", time.Since(ps.Since)), zap.Int("attempts", ps.Attempts))...)
}

// Paused lists the partitions paused on an outage now, in topic and partition order.
func (c *Consumer) Paused() []Pause {
	c.outage.mu.Lock()
	out := make([]Pause, 0, len(c.outage.paused))
	for _, p := range c.outage.paused {
		out = append(out, *p)
	}
	c.outage.mu.Unlock()
	slices.SortFunc(out, func(a, b Pause) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return a.Partition - b.Partition
	})
	return out
}

// StatusDetail says, for /debug/lifecycle, whether consumption is paused and why:
// "paused: orders/0@17 transient (*net.OpError) for 2.1s; …", or "" when it is not.
// It names the kind of error, never its message.
func (c *Consumer) StatusDetail() string {
	ps := c.Paused()
	if len(ps) == 0 {
		return ""
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return "paused: " + strings.Join(parts, "; ")
}

// outageWait waits before the next call of a paused message's handler: the backoff
// step, then, with Outage.Check, until the check passes (polled on the same
// schedule). It gives up the worker slot while it waits, so that other partitions
// may run, and takes it back before returning true. It returns false as soon as the
// partition's intake ends (a drain, a revocation, Stop): the message is released,
// uncommitted.
func (c *Consumer) outageWait(p partitionRun, b *wait.Backoff, slot *bool) bool {
	if *slot {
		<-c.slots
		*slot = false
	}
	for {
		if !c.pause(p, b.Next()) {
			return false
		}
		if c.cfg.Outage.Check == nil || c.checkDown(p.intake) == nil {
			break
		}
	}
	select {
	case c.slots <- struct{}{}:
		*slot = true
	case <-p.intake.Done():
		return false
	}
	return p.intake.Err() == nil
}
