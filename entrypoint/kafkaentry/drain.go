package kafkaentry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
)

// Drain stops intake and hands the partitions back with nothing lost: first it stops
// every partition's fetching and closes the gate, so that messages fetched but not
// yet started — including those kafka-go prefetched — are released uncommitted, and
// a message waiting between retries is released too; then it waits for the handlers
// that are running (a dead-letter write included); then it synchronously commits,
// in the current generation, the offsets of every message handled; then it closes
// the group, which leaves it so that the partitions are reassigned at once. The next
// owner of a partition starts right after the last message handled here: across a
// graceful restart nothing is lost and nothing committed is delivered again. (A
// rebalance that ends the generation during the drain commits the same way before
// the partitions move.)
//
// If ctx expires while handlers are still running, Drain returns ctx.Err() at once
// and leaves them, the commit and the close to Stop; the offsets of those messages
// stay uncommitted. The group's Close is bounded by CloseTimeout and ctx: one that
// hangs is abandoned and logged, not awaited (the commit is already done). Drain
// also returns a failed commit, and a *HandlerError (StopEntrypoint) that Serve did
// not return. It does not cancel handlers; Stop does. Stats().Drain tells what it
// did. Without Bind, or after Drain or Stop, it does nothing and returns nil.
func (c *Consumer) Drain(ctx context.Context) error {
	start := time.Now()
	c.base.Lock()
	if c.base.Drain() == entrypoint.Idle { // before Bind, or drained or stopped already
		c.base.Unlock()
		return nil
	}
	// No new message from here on; what is in flight is counted before intake stops,
	// or a retry wait released at once would count neither as in flight nor released.
	c.gate.Close()
	finishedBefore := c.stats.handled.Load() + c.stats.deadLettered.Load()
	releasedBefore := c.stats.released.Load()
	committedBefore := c.stats.committed.Load()
	ds := DrainStats{Ran: true, InFlight: c.gate.InFlight()}
	c.beginDrainLocked()
	c.base.Unlock()

	c.log.Info("draining", zap.Int("in_flight", ds.InFlight))
	werr := c.gate.Wait(ctx)
	ds.Finished = int(c.stats.handled.Load() + c.stats.deadLettered.Load() - finishedBefore)
	ds.Released = int(c.stats.released.Load() - releasedBefore)
	ds.Abandoned = c.gate.InFlight()
	if werr != nil {
		ds.Duration = time.Since(start)
		c.setDrainStats(ds)
		c.log.Warn("drain ran out of time; the messages still in flight stay uncommitted, left to Stop",
			ds.fields()...)
		if ferr := c.takeFailure(); ferr != nil {
			return errors.Join(werr, ferr)
		}
		return werr
	}

	var errs []error
	if _, err := c.commit(ctx); err != nil {
		errs = append(errs, fmt.Errorf("kafkaentry %q: final commit: %w", c.cfg.Name, err))
	}
	abandoned, err := c.closeGroup(ctx)
	ds.CloseAbandoned = abandoned
	if err != nil {
		errs = append(errs, fmt.Errorf("kafkaentry %q: %w", c.cfg.Name, err))
	}
	ds.Committed = c.stats.committed.Load() - committedBefore
	c.closeWriter(ctx)
	ds.Duration = time.Since(start)
	c.setDrainStats(ds)
	if err := c.takeFailure(); err != nil {
		errs = append(errs, err)
	}
	fields := append(ds.fields(), zap.Uint64("uncommitted", c.Stats().Uncommitted))
	if len(errs) > 0 {
		c.log.Warn("drained with errors", append(fields, zap.Error(errors.Join(errs...)))...)
	} else {
		c.log.Info("drained", fields...)
	}
	return errors.Join(errs...)
}

// DrainStats says what Drain did, for the shutdown report.
type DrainStats struct {
	Ran            bool          // Drain was called after Bind
	InFlight       int           // messages being handled when Drain began
	Finished       int           // of those, handled or dead-lettered during the drain
	Released       int           // of those, given back uncommitted (waiting for a retry)
	Abandoned      int           // of those, still running when ctx expired; left to Stop
	Committed      uint64        // messages whose offsets were committed during the drain
	CloseAbandoned bool          // the group's Close did not return within CloseTimeout
	Duration       time.Duration // how long Drain took
}

func (d DrainStats) fields() []zap.Field {
	return []zap.Field{
		zap.Int("in_flight_at_start", d.InFlight), zap.Int("finished", d.Finished),
		zap.Int("released", d.Released), zap.Int("abandoned", d.Abandoned),
		zap.Uint64("committed", d.Committed), zap.Bool("close_abandoned", d.CloseAbandoned),
		zap.Duration("duration", d.Duration),
	}
}

// Stats are a Consumer's counters since New.
type Stats struct {
	Consumed     uint64 // messages fetched
	Handled      uint64 // messages whose handler succeeded
	Failed       uint64 // handler calls that failed or panicked, retries included
	DeadLettered uint64 // messages written to the dead-letter topic
	Released     uint64 // messages given up uncommitted by a drain or Stop, to be delivered again
	Committed    uint64 // messages whose offsets were committed
	Uncommitted  uint64 // messages handled or dead-lettered whose offsets are not committed yet
	InFlight     int    // messages being handled now
	Drain        DrainStats
}

// Stats returns the consumer's counters and, once Drain ran, what it did.
func (c *Consumer) Stats() Stats {
	c.base.Lock()
	ds := c.drainStats
	c.base.Unlock()
	return Stats{
		Consumed:     c.stats.consumed.Load(),
		Handled:      c.stats.handled.Load(),
		Failed:       c.stats.failed.Load(),
		DeadLettered: c.stats.deadLettered.Load(),
		Released:     c.stats.released.Load(),
		Committed:    c.stats.committed.Load(),
		Uncommitted:  uint64(max(c.stats.uncommitted.Load(), 0)),
		InFlight:     c.gate.InFlight(),
		Drain:        ds,
	}
}

func (c *Consumer) setDrainStats(ds DrainStats) {
	c.base.Lock()
	c.drainStats = ds
	c.base.Unlock()
}

// DrainReport summarises the last Drain for the Host's shutdown report.
func (c *Consumer) DrainReport() string {
	c.base.Lock()
	d := c.drainStats
	c.base.Unlock()
	if !d.Ran {
		return "not drained"
	}
	return fmt.Sprintf("in_flight=%d finished=%d committed=%d released=%d abandoned=%d close_abandoned=%t",
		d.InFlight, d.Finished, d.Committed, d.Released, d.Abandoned, d.CloseAbandoned)
}
