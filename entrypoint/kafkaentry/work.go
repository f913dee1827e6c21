package kafkaentry

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/internal/safe"
)

// workerQueue is how many fetched messages wait for each worker. The queue only
// smooths the hand-off: a drain releases queued messages uncommitted, it does not
// handle them.
const workerQueue = 64

// Backoff of the fetch loop when kafka-go reports an error (a failed group join, a
// broker gone); kafka-go heals on its own, the loop only avoids spinning.
const (
	fetchBackoffInitial = 100 * time.Millisecond
	fetchBackoffMax     = 5 * time.Second
)

// fetchLoop fetches messages and hands each to the worker that owns its partition,
// until ctx is cancelled. It closes the worker queues when it returns. A message
// fetched and not handed over is not committed.
func (c *Consumer) fetchLoop(ctx context.Context, queues []chan kafka.Message) {
	defer func() {
		for _, q := range queues {
			close(q)
		}
	}()
	b := backoff{initial: fetchBackoffInitial, max: fetchBackoffMax}
	b.reset()
	for {
		msg, err := c.reader.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) { // stopped, or the reader closed
				return
			}
			wait := b.next()
			c.log.Warn("kafka fetch failed; retrying", zap.Error(err), zap.Duration("retry_in", wait))
			if !sleepCtx(ctx, wait) {
				return
			}
			continue
		}
		b.reset()
		c.stats.consumed.Add(1)
		if tm := c.metrics.topic(msg.Topic); tm != nil {
			tm.consumed.Inc()
		}
		select {
		case queues[pick(msg.Topic, msg.Partition, len(queues))] <- msg:
		case <-ctx.Done():
			return
		}
	}
}

// pick maps a partition to a worker. Partitions of one topic go round robin, so
// they spread evenly; each partition always goes to the same worker, which keeps
// its order.
func pick(topic string, partition, workers int) int {
	if workers == 1 {
		return 0
	}
	h := uint32(2166136261) // FNV-1a of the topic
	for i := 0; i < len(topic); i++ {
		h ^= uint32(topic[i])
		h *= 16777619
	}
	return int((h + uint32(partition)) % uint32(workers))
}

// workLoop handles the messages of one queue in order until the queue is closed.
// Once a message is given up on (a drain or Stop, or a failure that stops the
// entrypoint), every later message of the queue is released unhandled: handling
// them would commit past the one given up on.
func (c *Consumer) workLoop(ctx context.Context, queue <-chan kafka.Message) {
	halted := false
	for msg := range queue {
		if halted {
			continue
		}
		leave, ok := c.gate.Enter()
		if !ok { // draining: released, uncommitted
			halted = true
			continue
		}
		if !c.process(ctx, &msg) {
			halted = true
		}
		leave()
	}
}

// process handles one message: the handler with retries, then OnFailure. It reports
// whether the message is done (handled or dead-lettered, and marked for commit);
// false means it was given up on and its offset must not be committed.
func (c *Consumer) process(ctx context.Context, msg *kafka.Message) bool {
	tm := c.metrics.topic(msg.Topic)
	b := c.newBackoff()
	var err error
	attempts := 0
	for {
		attempts++
		err = safe.Call(c.what, func() error { return c.handler(ctx, *msg) })
		if err == nil {
			c.stats.handled.Add(1)
			if tm != nil {
				tm.handled.Inc()
			}
			c.marked(msg)
			return true
		}
		if ctx.Err() != nil { // Stop cut the handler; not a failure of the message
			c.stats.released.Add(1)
			return false
		}
		c.stats.failed.Add(1)
		if tm != nil {
			tm.failed.Inc()
		}
		if errors.Is(err, ErrUndecodable) || attempts >= c.cfg.Retry.Attempts {
			break
		}
		wait := b.next()
		c.log.Warn("handler failed; retrying", msgFields(msg, failureFields(err, attempts, zap.Duration("retry_in", wait))...)...)
		if !c.pause(ctx, wait) {
			c.log.Info("retry given up by drain; the message stays uncommitted", msgFields(msg, zap.Int("attempts", attempts))...)
			c.stats.released.Add(1)
			return false
		}
	}
	c.log.Error("handler failed; giving up", msgFields(msg, failureFields(err, attempts, zap.Stringer("on_failure", c.cfg.OnFailure))...)...)
	if c.cfg.OnFailure.deadLetter {
		if !c.deadLetter(ctx, msg, err, attempts) {
			c.stats.released.Add(1)
			return false
		}
		return true
	}
	c.fail(&HandlerError{
		Entrypoint: c.cfg.Name, Topic: msg.Topic, Partition: msg.Partition, Offset: msg.Offset,
		Attempts: attempts, Err: err,
	})
	return false
}

// pause waits d before the next attempt and reports true, or reports false as soon
// as a drain begins or ctx is done: a drain does not wait out retry schedules.
func (c *Consumer) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.draining:
		return false
	case <-ctx.Done():
		return false
	}
}

// sleepCtx waits d and reports true, or reports false as soon as ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// backoff is a jittered exponential schedule: each wait is drawn uniformly from
// [step/2, step], and the step doubles up to max.
type backoff struct {
	initial, max, step time.Duration
}

func (c *Consumer) newBackoff() backoff {
	b := backoff{initial: c.cfg.Retry.Initial, max: c.cfg.Retry.Max}
	b.reset()
	return b
}

func (b *backoff) reset() { b.step = b.initial }

func (b *backoff) next() time.Duration {
	wait := b.step/2 + rand.N(b.step/2+1)
	b.step = min(b.step*2, b.max)
	if b.step <= 0 { // overflowed
		b.step = b.max
	}
	return wait
}

func msgFields(msg *kafka.Message, more ...zap.Field) []zap.Field {
	return append([]zap.Field{
		zap.String("topic", msg.Topic), zap.Int("partition", msg.Partition), zap.Int64("offset", msg.Offset),
	}, more...)
}

func failureFields(err error, attempts int, more ...zap.Field) []zap.Field {
	fields := append([]zap.Field{zap.Error(err), zap.Int("attempts", attempts)}, more...)
	if pe, ok := errors.AsType[*safe.PanicError](err); ok {
		fields = append(fields, zap.ByteString("stack", pe.Stack))
	}
	return fields
}
