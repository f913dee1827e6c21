package kafkaentry

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/internal/wait"
)

// Backoff of a partition's fetch loop when kafka-go reports an error (a broker
// gone, a leader moved); kafka-go heals on its own, the loop only avoids spinning.
const (
	fetchBackoffInitial = 100 * time.Millisecond
	fetchBackoffMax     = 5 * time.Second
)

// partitionRun is one partition assigned in one generation.
type partitionRun struct {
	assignment
	gs *genState
	// intake ends at the end of the generation, and at a drain, a failure under
	// StopEntrypoint or Stop: no message is taken after it, and retry waits end.
	intake context.Context
	// handlers is the handlers' ctx: Stop cancels it, and so does the end of the
	// generation for handlers that outlive half the RebalanceTimeout.
	handlers context.Context
	// Made by start, once per partition run: the partition's entry in the
	// generation's offset table, and the start of its handling spans (nil without
	// tracing).
	offsets *partitionOffsets
	spans   *partitionSpans
}

// start makes what each message of the partition run would otherwise look up or
// build again: its offset entry and its spans' name and attributes. With tracing,
// the handlers' ctx gets an empty span context on top: a message without trace
// context starts a trace of its own whatever span Bind's ctx held, and the span
// lookups of each handling span's start stop there rather than walk the whole ctx.
func (p *partitionRun) start(c *Consumer) {
	p.offsets = p.gs.offsets.entry(topicPartition{p.topic, p.partition})
	if c.tracer != nil {
		p.spans = c.newPartitionSpans(p.topic, p.partition)
		p.handlers = trace.ContextWithSpanContext(p.handlers, trace.SpanContext{})
	}
}

// consumePartition reads and handles one partition of a generation, in offset
// order, from Serve until its intake ends. Then it tells the generation it is no
// longer handling anything and closes its reader. A message fetched and not handled
// is not committed: the partition's next reader starts from the committed offset.
func (c *Consumer) consumePartition(p partitionRun) {
	handling := true
	finish := func() {
		if handling {
			handling = false
			p.gs.doneHandling()
		}
	}
	defer finish()

	select {
	case <-c.serving:
	case <-p.intake.Done():
		return
	}
	r, err := c.openReader(p.topic, p.partition, p.offset)
	if err != nil {
		c.log.Error("cannot read a partition; it waits for the next generation",
			zap.Stringer("partition", p.assignment), zap.Error(err))
		return
	}
	p.start(c)
	defer func() {
		finish() // the generation need not wait for the reader's Close
		if err := safe.Call("kafka Reader.Close", r.Close); err != nil {
			c.log.Warn("partition reader close failed", zap.Stringer("partition", p.assignment), zap.Error(err))
		}
	}()
	c.readPartition(p, r)
}

// readPartition fetches and handles messages until the intake ends, or a message is
// given up on: handling the ones after it would commit past it.
func (c *Consumer) readPartition(p partitionRun, r partitionReader) {
	b := wait.Backoff{Initial: fetchBackoffInitial, Max: fetchBackoffMax}
	for {
		msg, err := r.FetchMessage(p.intake)
		if p.intake.Err() != nil { // even with a message: it was not taken
			return
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			next := b.Next()
			c.log.Warn("kafka fetch failed; retrying", zap.Stringer("partition", p.assignment),
				zap.Error(err), zap.Duration("retry_in", next))
			if !wait.SleepCtx(p.intake, next) {
				return
			}
			continue
		}
		b.Reset()
		c.stats.consumed.Add(1)
		if tm := c.metrics.topic(msg.Topic); tm != nil {
			tm.consumed.Inc()
		}
		if !c.handle(p, &msg) {
			return
		}
	}
}

// handle processes msg holding a worker slot (Config.Workers) and the gate. It
// reports false when msg was not done — refused by a drain, released, or failed —
// and the partition must stop.
func (c *Consumer) handle(p partitionRun, msg *kafka.Message) bool {
	select {
	case c.slots <- struct{}{}: // a free slot, the common case: no wait, nor the intake's channel locked
	default:
		select {
		case c.slots <- struct{}{}:
		case <-p.intake.Done():
			return false
		}
	}
	slot := true // a pause gives the slot up while it waits
	defer func() {
		if slot {
			<-c.slots
		}
	}()
	if p.intake.Err() != nil {
		return false
	}
	leave, ok := c.gate.Enter()
	if !ok { // draining: released, uncommitted
		return false
	}
	defer leave()
	return c.process(p, msg, &slot)
}

// process handles one message: attempts runs the handler until the message
// settles, and settle applies the outcome. It reports whether the message is done
// (handled or dead-lettered, and marked for commit); false means it was given up on
// and its offset must not be committed. With tracing, the handling runs in a
// consumer span that continues the message's trace.
func (c *Consumer) process(p partitionRun, msg *kafka.Message, slot *bool) bool {
	h, p := c.startHandling(p, msg)
	return c.settle(h, p, msg, c.attempts(h, p, msg, slot))
}

// Outcomes of a message's attempts, as settlement.outcome and the span's
// servicewright.kafka.outcome give them.
const (
	outcomeHandled  = "handled"  // the handler succeeded
	outcomeReleased = "released" // given back uncommitted: cut short, or a wait ended by a drain, revocation or stop
	outcomeGivenUp  = "given_up" // failed for good: OnFailure applies
)

// settlement is how a message's attempts ended.
type settlement struct {
	outcome  string
	err      error // the last attempt's error; nil when handled
	attempts int   // calls that count against Retry.Attempts
	resumed  bool  // handled after its partition paused on it
	// why, when set, is the line logged at info when the message is released, with
	// fields after the message's own.
	why    string
	fields []zap.Field
}

// attempts calls the handler on msg until it succeeds, is cut short, or fails for
// good: retries on Config.Retry's schedule, and during an outage (Config.Outage) the
// partition pauses on the message instead. It counts and logs each failure.
func (c *Consumer) attempts(h handling, p partitionRun, msg *kafka.Message, slot *bool) settlement {
	ctx := p.handlers
	tm := c.metrics.topic(msg.Topic)
	b := c.newBackoff()
	var ob wait.Backoff // the outage schedule, made at the first outage failure
	attempts := 0       // calls that count against Retry.Attempts: not those of an outage
	panicReported := false
	for {
		attempts++
		err := safe.Call(c.what, func() error { return c.handler(ctx, *msg) })
		if err == nil {
			return settlement{outcome: outcomeHandled, attempts: attempts, resumed: ob.Initial > 0}
		}
		if ctx.Err() != nil { // Stop or a revocation cut the handler; not a failure of the message
			return settlement{outcome: outcomeReleased, err: err, attempts: attempts}
		}
		c.stats.failed.Add(1)
		c.reportPanic(h, msg, err, attempts, &panicReported)
		if tm != nil {
			tm.failed.Inc()
		}
		if cause := c.outageCause(ctx, msg, err); cause != "" {
			attempts--
			if ob.Initial == 0 {
				ob = wait.Backoff{Initial: c.cfg.Outage.Initial, Max: c.cfg.Outage.Max}
			}
			c.paused(h, msg, cause, err)
			if !c.outageWait(p, &ob, slot) {
				return settlement{outcome: outcomeReleased, err: err, attempts: attempts,
					why: "paused message released (drain, revocation or stop); it stays uncommitted"}
			}
			continue
		}
		if ob.Initial > 0 {
			c.resumed(h, msg, "failing on its own")
			ob = wait.Backoff{}
		}
		if noRetry(err) || attempts >= c.cfg.Retry.Attempts {
			return settlement{outcome: outcomeGivenUp, err: err, attempts: attempts}
		}
		next := b.Next()
		h.log().Warn("handler failed; retrying", msgFields(msg, failureFields(err, attempts, zap.Duration("retry_in", next))...)...)
		h.event("retry", attribute.Int("attempt", attempts), attribute.String("error.type", errorType(err)),
			attribute.String("retry_in", next.String()))
		if !c.pause(p, next) {
			return settlement{outcome: outcomeReleased, err: err, attempts: attempts,
				why:    "retry given up (drain, revocation or stop); the message stays uncommitted",
				fields: []zap.Field{zap.Int("attempts", attempts)}}
		}
	}
}

// settle applies the outcome of msg's attempts and ends the handling's span: a
// message handled is counted and marked for commit; one given up on goes to
// OnFailure (dead-lettered, and marked, or the entrypoint fails); one released — or
// whose dead-letter write was cut short — is counted as released, its partition's
// pause ended, and stays uncommitted. It reports whether msg is done.
func (c *Consumer) settle(h handling, p partitionRun, msg *kafka.Message, s settlement) bool {
	switch s.outcome {
	case outcomeHandled:
		c.stats.handled.Add(1)
		if tm := c.metrics.topic(msg.Topic); tm != nil {
			tm.handled.Inc()
		}
		c.outage.succeeded()
		if s.resumed {
			c.resumed(h, msg, outcomeHandled)
		}
		c.marked(p, msg)
		h.end(outcomeHandled, nil)
		return true
	case outcomeGivenUp:
		c.outage.forget(msg)
		h.log().Error("handler failed; giving up", msgFields(msg, failureFields(s.err, s.attempts, zap.Stringer("on_failure", c.cfg.OnFailure))...)...)
		if !c.cfg.OnFailure.deadLetter {
			c.fail(p.gs, &HandlerError{
				Entrypoint: c.cfg.Name, Topic: msg.Topic, Partition: msg.Partition, Offset: msg.Offset,
				Attempts: s.attempts, Err: s.err,
			})
			h.end("failed", s.err)
			return false
		}
		if c.deadLetter(h, p, msg, s.err, s.attempts) {
			h.end("dead_lettered", s.err)
			return true
		}
		// The dead-letter write was cut short: released like the rest.
	}
	if s.why != "" {
		h.log().Info(s.why, msgFields(msg, s.fields...)...)
	}
	c.stats.released.Add(1)
	c.resumed(h, msg, outcomeReleased) // no-op unless its partition is paused on it
	h.end(outcomeReleased, s.err)
	return false
}

// pause waits d before the next attempt and reports true, or reports false as soon
// as the partition's intake ends (a drain, a revocation, a failure, Stop) or the
// handlers' ctx is done: nobody waits out a retry schedule.
func (c *Consumer) pause(p partitionRun, d time.Duration) bool {
	if p.intake.Err() != nil {
		return false
	}
	ctx, cancel := context.WithCancel(p.handlers)
	defer cancel()
	defer context.AfterFunc(p.intake, cancel)()
	return wait.SleepCtx(ctx, d)
}

// newBackoff returns the retry schedule of Config.Retry.
func (c *Consumer) newBackoff() wait.Backoff {
	return wait.Backoff{Initial: c.cfg.Retry.Initial, Max: c.cfg.Retry.Max}
}

func msgFields(msg *kafka.Message, more ...zap.Field) []zap.Field {
	return append([]zap.Field{
		zap.String("topic", msg.Topic), zap.Int("partition", msg.Partition), zap.Int64("offset", msg.Offset),
	}, more...)
}

func failureFields(err error, attempts int, more ...zap.Field) []zap.Field {
	fields := append([]zap.Field{zap.Error(err), zap.Int("attempts", attempts)}, more...)
	if pe, ok := errors.AsType[*fault.PanicError](err); ok {
		fields = append(fields, zap.ByteString("stack", pe.Stack))
	}
	return fields
}
