package cronentry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/internal/safe"
)

// A lock backend that loses its data (a Redis restart without persistence, a
// failover to a replica that missed the latest writes) forgets the ticks it
// guarded: a replica that reaches a tick after the loss finds its lease free and
// would run it a second time. The epoch detects the loss. Each job has a sentinel
// key, "cron:<job>:epoch", whose fencing counter is only ever advanced, never
// acquired, so it holds the fleet's epoch for the job as long as the backend keeps
// its data. A replica remembers the epoch it saw, reading the sentinel at every tick
// (after the lease's answer: a replica that lost the tick learns the epoch too).
// After winning a tick's lease (lease first, sentinel second), it finds:
//
//   - the same epoch: the lease is trustworthy; the tick runs;
//   - a lower one (the backend lost the sentinel) or a higher one (another replica
//     saw the loss first): the backend lost data since this replica last looked,
//     and another replica may have run this tick before the loss. The tick is
//     skipped (skipped_lock_lost, logged), the epoch moves to one above the last
//     known, and every tick scheduled before this moment is skipped too, since
//     their leases may predate the loss.
//
// A replica's first look adopts the epoch it finds (advancing a missing sentinel to
// 1). So each tick runs at most once across a loss, except on a replica that makes
// its first look while another has just re-advanced a lost sentinel; a job that
// must run exactly once gives FleetLock.Claim instead, and the store decides.

// epochState is one job's epoch as this replica knows it.
type epochState struct {
	mu    sync.Mutex
	epoch uint64    // 0 until the first look
	since time.Time // ticks scheduled before it are skipped (set when a loss is seen)
}

func (f *FleetLock) epochOf(job string) *epochState {
	e, _ := f.epochs.LoadOrStore(job, &epochState{})
	return e.(*epochState)
}

// checkEpoch reads job's sentinel after tick t's lease was answered and reports
// whether the tick may run; won says whether this replica took the lease (a
// replica that did not only learns the epoch).
func (s *Scheduler) checkEpoch(ctx context.Context, j *job, t Tick, won bool) outcome {
	f := j.OncePerFleet
	key := "cron:" + j.Name + ":epoch"
	e := f.epochOf(j.Name)
	e.mu.Lock()
	defer e.mu.Unlock()
	if won && t.Scheduled.Before(e.since) {
		s.log.Warn("cron tick skipped: it is older than a loss of the fleet lock's data, and may have run elsewhere before it",
			tickFields(t, zap.Time("loss_seen", e.since))...)
		return skippedLockLost
	}
	var fence uint64
	err := safe.Call(fmt.Sprintf("cron job %q epoch", j.Name), func() error {
		h, err := f.Lock.Inspect(ctx, key)
		fence = h.Fence
		return err
	})
	if err != nil {
		s.log.Error("cron tick not run: its fleet lock's epoch could not be read", tickFields(t, zap.Error(err))...)
		return lockError
	}
	switch {
	case e.epoch == 0 && fence > 0:
		e.epoch = fence
		return succeeded
	case e.epoch == 0:
		if err := f.Lock.AdvanceFence(ctx, key, 1); err != nil {
			s.log.Error("cron tick not run: its fleet lock's epoch could not be set", tickFields(t, zap.Error(err))...)
			return lockError
		}
		e.epoch = 1
		return succeeded
	case fence == e.epoch:
		return succeeded
	}
	next := max(fence, e.epoch+1)
	if err := f.Lock.AdvanceFence(ctx, key, next); err != nil {
		s.log.Error("cron tick not run: its fleet lock's epoch could not be moved", tickFields(t, zap.Error(err))...)
		return lockError
	}
	fields := tickFields(t, zap.Uint64("epoch_known", e.epoch), zap.Uint64("epoch_found", fence), zap.Uint64("epoch_now", next))
	e.epoch, e.since = next, time.Now()
	if !won {
		s.log.Warn("the fleet lock lost its data since this replica last looked; ticks scheduled before now are skipped here", fields...)
		return skippedOtherReplica
	}
	s.log.Warn("cron tick skipped: the fleet lock lost its data since this replica last looked, and the tick may have run elsewhere before the loss", fields...)
	return skippedLockLost
}
