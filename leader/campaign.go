package leader

import (
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/internal/wait"
)

// errNoAnswer: an acquire was not answered within CampaignEvery. The call goes on;
// if it lands, it is released.
var errNoAnswer = errors.New("leader: acquire not answered in time")

// campaignState is what the campaign loop remembers between campaigns.
type campaignState struct {
	freeSince  time.Time   // since when the lease has been seen free; zero while held or unknown
	want       *lock.Lease // our handoff request, while we ask
	wantFails  int         // failed acquires in a row while asking
	quietUntil time.Time   // no asking before this, after giving a request up
	keep       uint64      // token of a lease whose body never returned: left to lapse, not released
	last       uint64      // token of the latest lease this replica won
	unsure     bool        // an acquire failed without saying whether it landed
	dup        uint64      // token of the duplicate owner's lease reported last
	waited     bool        // the latest campaign queued on the lock until its wait passed
	fenced     bool        // the fence was advanced before queueing; reset by an unclaimed term
}

// run is the campaign loop: campaign, lead a term when one is won, wait, again, until
// quit is closed or a fatal error stops it.
func (l *Leadership) run(base, camp context.Context, done chan<- struct{}) {
	defer close(done)
	st := &campaignState{}
	defer func() {
		l.dropWant(base, st)
		// An acquire in flight releases what it lands; give it ReleaseTimeout.
		ctx, cancel := context.WithTimeout(base, l.conf.ReleaseTimeout)
		defer cancel()
		_ = l.acq.Wait(ctx)
	}()
	if err := l.loop(base, camp, st); err != nil {
		l.fail(err)
	}
}

func (l *Leadership) loop(base, camp context.Context, st *campaignState) error {
	next := time.Duration(0)
	backoff := wait.Backoff{Initial: l.conf.Retry.Initial, Max: l.conf.Retry.Max}
	var w watcher
	defer w.unwatch()
	for l.pause(camp, next, &w) {
		lease, sent, err := l.campaign(camp, st)
		if err != nil {
			return err
		}
		if lease == nil {
			next = l.afterLoss(st, &w)
			continue
		}
		st.last = lease.Token
		if closed(l.quit) { // won just as Drain came: do not start a term
			l.release(base, *lease, "acquire that landed while stopping")
			return nil
		}
		reason, kept, err := l.reign(base, *lease, sent)
		st.freeSince = time.Time{} // seeing the lease free starts again after our term
		if kept {
			st.keep = lease.Token
		}
		if reason == reasonUnclaimed {
			st.fenced = false // the store refused the token: advance before the next wait
		}
		if err != nil {
			return err
		}
		switch reason {
		case reasonStopped:
			return nil
		case reasonFailed:
			next = backoff.Next()
			l.log.Info("leadership: campaigning again after backoff", zap.Duration("retry_in", next))
		default:
			next = l.campaignWait()
			backoff.Reset()
		}
	}
	return nil
}

// campaignWait draws the wait before the next campaign from [0.8, 1] × CampaignEvery,
// so that replicas spread out but none waits longer than CampaignEvery.
func (l *Leadership) campaignWait() time.Duration {
	ce := l.conf.CampaignEvery
	return ce - rand.N(ce/5+1)
}

// campaign makes one attempt at the lease. It returns the lease and when its acquire
// was sent when won, nothing when not, and an error only when campaigning must stop
// for good.
func (l *Leadership) campaign(ctx context.Context, st *campaignState) (*lock.Lease, time.Time, error) {
	s := &l.conf
	if s.MayCampaign != nil {
		ok, err := call(&l.bg, ctx, s.CampaignEvery, "MayCampaign", s.MayCampaign)
		if isFatal(err) || fault.IsPermanent(err) {
			return nil, time.Time{}, err
		}
		if err != nil || !ok {
			if err != nil {
				l.log.Warn("leadership: MayCampaign failed; sitting this campaign out", zap.Error(err))
			}
			l.dropWant(ctx, st)
			return nil, time.Time{}, nil
		}
	}
	wt := l.waiter()
	if wt != nil && st.waited && !s.Handoff {
		// Still queued a moment ago: wait again without reading the lease first,
		// so a waiting campaigner sends one command per wait.
		return l.queue(ctx, st, wt)
	}
	held, known, err := l.look(ctx, st)
	if err != nil {
		return nil, time.Time{}, err
	}
	p := planAcquire
	if held {
		p = planWait
	}
	if s.Handoff {
		if p, err = l.planHandoff(ctx, st, held, known); err != nil {
			return nil, time.Time{}, err
		}
	}
	if p == planWait {
		if wt != nil && held {
			return l.queue(ctx, st, wt)
		}
		return nil, time.Time{}, nil
	}
	if s.FenceFloor != nil {
		if err := l.advanceFence(ctx); err != nil {
			return nil, time.Time{}, err
		}
	}
	lease, sent, err := l.acquire(ctx, s.Key)
	l.afterAcquire(ctx, st, p == planAsk, err)
	if err != nil && !errors.Is(err, lock.ErrHeld) {
		st.unsure = true // it may have landed: a lease of ours found later is released
	}
	switch {
	case err == nil:
		return &lease, sent, nil
	case isFatal(err):
		return nil, time.Time{}, err
	case errors.Is(err, lock.ErrHeld):
		l.log.Debug("leadership: lease held by another replica")
	default:
		l.log.Warn("leadership: acquire failed", zap.Error(err))
	}
	return nil, time.Time{}, nil
}

// look reads the lease: held reports another holder, known that the read worked. A
// lease of our own outside a term is an acquire whose answer was lost after it
// landed; it is released (unless its body is still running) and counts as free.
func (l *Leadership) look(ctx context.Context, st *campaignState) (held, known bool, err error) {
	s := &l.conf
	h, err := call(&l.bg, ctx, s.CampaignEvery, "inspect lease", func(ctx context.Context) (lock.Holder, error) {
		return s.Lock.Inspect(ctx, s.Key)
	})
	if isFatal(err) {
		return false, false, err
	}
	if err != nil {
		l.log.Warn("leadership: cannot read the lease; trying to acquire anyway", zap.Error(err))
		st.freeSince = time.Time{}
		return false, false, nil
	}
	if h.Held() && h.Owner == s.Owner && h.Token != st.keep {
		if st.unsure || h.Token == st.last {
			l.release(ctx, lock.Lease{Key: s.Key, Owner: s.Owner, Token: h.Token, TTL: s.TTL}, "acquire whose answer was lost")
			h = lock.Holder{}
		} else if h.Token != st.dup {
			// No acquire of ours can have drawn this token: another process
			// campaigns under our owner id. Releasing its lease would only make
			// the two take it from each other.
			st.dup = h.Token
			l.duplicate(h.Token, nil)
		}
	}
	st.unsure = false
	if h.Held() {
		st.freeSince = time.Time{}
		return true, true, nil
	}
	if st.freeSince.IsZero() {
		st.freeSince = time.Now()
	}
	return false, true, nil
}

// advanceFence moves the lock's counter to the store's fence floor. An unreadable
// floor or a failed advance is skipped: the claim refuses a token that is too low.
func (l *Leadership) advanceFence(ctx context.Context) error {
	s := &l.conf
	floor, err := call(&l.bg, ctx, s.CampaignEvery, "FenceFloor", s.FenceFloor)
	if err == nil {
		err = do(&l.bg, ctx, s.CampaignEvery, "advance fence", func(ctx context.Context) error {
			return s.Lock.AdvanceFence(ctx, s.Key, floor)
		})
	}
	if isFatal(err) {
		return err
	}
	if err != nil {
		l.log.Warn("leadership: fence floor not applied; acquiring without it", zap.Error(err))
	}
	return nil
}

// acquire sends one Acquire for key and waits for its answer up to CampaignEvery, or
// until ctx is done. The call itself is never cancelled (its ctx only expires after a
// TTL, when whatever it could land has lapsed): one that lands after we stopped
// waiting is released. The time returned is when the call was sent; a term's
// deadlines count from it.
func (l *Leadership) acquire(ctx context.Context, key string) (lock.Lease, time.Time, error) {
	s := &l.conf
	sent := time.Now()
	t := time.NewTimer(s.CampaignEvery)
	defer t.Stop()
	lease, answered, err := l.awaitLease(ctx, t.C, context.WithoutCancel(ctx), s.TTL,
		func(cctx context.Context) (lock.Lease, error) { return s.Lock.Acquire(cctx, key, s.Owner, s.TTL) },
		"acquire that landed after the campaign stopped waiting")
	if !answered {
		return lock.Lease{}, sent, fmt.Errorf("acquire %q: %w after %v", key, errNoAnswer, s.CampaignEvery)
	}
	return lease, sent, err
}

// awaitLease runs call, with a ctx derived from callCtx and bounded by bound, in a
// goroutine l.acq owns, and waits for its answer until giveUp fires or ctx is done.
// It reports answered = false when it stopped waiting first. A lease that lands
// after the wait gave up, or that answers just as ctx ended, is released with what
// as the reason; an answer that comes as giveUp fires (ctx still live) is returned.
func (l *Leadership) awaitLease(ctx context.Context, giveUp <-chan time.Time, callCtx context.Context,
	bound time.Duration, call func(context.Context) (lock.Lease, error), what string) (lock.Lease, bool, error) {
	type result struct {
		lease lock.Lease
		err   error
	}
	var (
		mu     sync.Mutex
		gaveUp bool
		ch     = make(chan result, 1)
		rctx   = context.WithoutCancel(ctx)
	)
	l.acq.Go(func() {
		cctx, cancel := context.WithTimeout(callCtx, bound)
		defer cancel()
		var r result
		r.err = safe.Call("acquire", func() (err error) {
			r.lease, err = call(cctx)
			return err
		})
		mu.Lock()
		late := gaveUp
		if !late {
			ch <- r
		}
		mu.Unlock()
		if late && r.err == nil {
			l.release(rctx, r.lease, what)
		}
	})
	select {
	case r := <-ch:
		return r.lease, true, r.err
	case <-giveUp:
	case <-ctx.Done():
	}
	mu.Lock()
	gaveUp = true
	mu.Unlock()
	select {
	case r := <-ch: // answered as we gave up
		if r.err != nil || ctx.Err() == nil {
			return r.lease, true, r.err
		}
		l.release(rctx, r.lease, what)
	default:
	}
	return lock.Lease{}, false, ctx.Err()
}

// release frees lease within ReleaseTimeout; failures are logged (the lease then
// lapses at its TTL).
func (l *Leadership) release(ctx context.Context, lease lock.Lease, what string) {
	err := do(&l.bg, context.WithoutCancel(ctx), l.conf.ReleaseTimeout, "release", func(ctx context.Context) error {
		return l.conf.Lock.Release(ctx, lease)
	})
	log := l.log.With(zap.String("lock", lease.Key), zap.Uint64("token", lease.Token), zap.String("what", what))
	switch {
	case err == nil:
		log.Info("leadership: released")
	case errors.Is(err, lock.ErrNotHeld):
		log.Debug("leadership: nothing to release; the lease is gone already")
	default:
		log.Warn("leadership: release failed; the lease lapses at its TTL", zap.Error(err))
	}
}
