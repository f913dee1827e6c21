package leader

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/lock"
)

// waiter returns the lock as a lock.Waiter when a campaigner that finds the lease
// held should queue on the backend for it (Config.Poll is false and the lock can),
// nil otherwise.
func (l *Leadership) waiter() lock.Waiter {
	if l.conf.Poll {
		return nil
	}
	w, _ := l.conf.Lock.(lock.Waiter)
	return w
}

// waitAcquire queues on the lock for up to wait (lock.Waiter), so a holder's release
// or crash passes the lease to this replica within a round trip. The call is
// cancelled with ctx (Drain); one that lands as ctx ends is released. The time
// returned is when the wait was sent: the lease's deadlines count from it, which
// can only make the first renewal come sooner.
func (l *Leadership) waitAcquire(ctx context.Context, w lock.Waiter, wait time.Duration) (lock.Lease, time.Time, error) {
	s := &l.conf
	sent := time.Now()
	// The backend ends the wait itself after wait; CampaignEvery more bounds a
	// backend that does not answer. The wait is cancelled with ctx.
	lease, answered, err := l.awaitLease(ctx, nil, ctx, wait+s.CampaignEvery,
		func(cctx context.Context) (lock.Lease, error) {
			return w.AcquireWait(cctx, s.Key, s.Owner, s.TTL, wait)
		},
		"waiting acquire that landed while stopping")
	if !answered && err == nil {
		err = ctx.Err()
	}
	return lease, sent, err
}

// queue is the campaign of a replica that found the lease held and can queue on the
// lock: it advances the fence first when FenceFloor is set and it has not since its
// last unclaimed term, then waits on the lock for up to one campaign interval.
func (l *Leadership) queue(ctx context.Context, st *campaignState, w lock.Waiter) (*lock.Lease, time.Time, error) {
	st.waited = false
	if l.conf.FenceFloor != nil && !st.fenced {
		if err := l.advanceFence(ctx); err != nil {
			return nil, time.Time{}, err
		}
		st.fenced = true
	}
	// A full interval: the backend's queue decides who is next, so there is no
	// lock-step to break, and each wait is one command.
	lease, sent, err := l.waitAcquire(ctx, w, l.conf.CampaignEvery)
	switch {
	case err == nil:
		return &lease, sent, nil
	case isFatal(err):
		return nil, time.Time{}, err
	case errors.Is(err, lock.ErrHeld):
		st.waited = true
		l.log.Debug("leadership: lease still held after waiting for it")
	case ctx.Err() != nil:
	default:
		st.unsure = true
		l.log.Warn("leadership: waiting acquire failed", zap.Error(err))
	}
	return nil, time.Time{}, nil
}
