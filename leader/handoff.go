package leader

import (
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"time"

	"go.uber.org/zap"
)

// Handoff on request. A replica that prefers to lead asks by holding the want-lock
// (Key+":want", same TTL as the lease) and renewing it every campaign. The holder
// checks the want-lock at each renewal and yields when someone else asks and renewed
// the request within two campaign intervals, unless it prefers the lease itself.
// While someone asks, the other replicas leave a free lease to the asker until they
// have seen it free for three campaign intervals. An asker gives its request up
// after three failed acquires in a row, or at once when an acquire is not answered
// in time, and does not ask again for a TTL.

// plan is what a campaign does once it has looked at the lease.
type plan int

const (
	planAcquire plan = iota // try to acquire
	planAsk                 // try to acquire, as the replica asking for a handoff
	planWait                // do not acquire this time
)

const (
	askFailLimit   = 3 // failed acquires in a row before an asker gives up
	askFreshWithin = 2 // campaign intervals within which an asker must have renewed
	standAsideFor  = 3 // campaign intervals a free lease is left to an asker
)

// wantSuffix ends the name of the lock a replica holds to ask a leader for a
// handoff: the request for lease key K is the lock K + wantSuffix. No lease key of a
// leadership or a singleton may end with it.
const wantSuffix = ":want"

func (l *Leadership) wantKey() string { return l.conf.Key + wantSuffix }

// planHandoff decides, under Config.Handoff, whether this campaign acquires. held
// and known are what look saw of the lease. A failing Prefer or want-lock read means
// this campaign runs as if handoff were off.
func (l *Leadership) planHandoff(ctx context.Context, st *campaignState, held, known bool) (plan, error) {
	s := &l.conf
	plain := planAcquire
	if held {
		plain = planWait
	}
	prefer, err := call(&l.bg, ctx, s.CampaignEvery, "Prefer", s.Prefer)
	if isFatal(err) {
		return 0, err
	}
	if err != nil {
		l.log.Warn("leadership: Prefer failed; campaigning without handoff", zap.Error(err))
		return plain, nil
	}
	if prefer && !time.Now().Before(st.quietUntil) {
		asking, err := l.holdWant(ctx, st)
		switch {
		case isFatal(err):
			return 0, err
		case asking && held:
			return planWait, nil // the holder yields at its next renewal
		case asking && known:
			return planAsk, nil
		case asking:
			return planAcquire, nil // lease unread: an acquire refused is not the asker's failure
		case err != nil && !errors.Is(err, lock.ErrHeld):
			l.log.Warn("leadership: cannot hold the want-lock; campaigning without handoff", zap.Error(err))
			return plain, nil
		}
		// Someone else asks; fall through as a replica that does not.
	} else {
		l.dropWant(ctx, st)
	}
	if held || !known {
		return plain, nil
	}
	w, err := call(&l.bg, ctx, s.CampaignEvery, "inspect want-lock", func(ctx context.Context) (lock.Holder, error) {
		return s.Lock.Inspect(ctx, l.wantKey())
	})
	if isFatal(err) {
		return 0, err
	}
	if err != nil {
		l.log.Warn("leadership: cannot read the want-lock; campaigning without handoff", zap.Error(err))
		return planAcquire, nil
	}
	if w.Held() && w.Owner != s.Owner && time.Since(st.freeSince) < standAsideFor*s.CampaignEvery {
		l.log.Debug("leadership: standing aside for a replica that asked", zap.String("asker", w.Owner))
		return planWait, nil
	}
	return planAcquire, nil
}

// holdWant takes or renews our want-lock. It reports whether we hold it; lock.ErrHeld
// means another replica asks.
func (l *Leadership) holdWant(ctx context.Context, st *campaignState) (bool, error) {
	s := &l.conf
	if st.want != nil {
		err := do(&l.bg, ctx, s.CampaignEvery, "renew want-lock", func(ctx context.Context) error {
			return s.Lock.Renew(ctx, *st.want)
		})
		if !errors.Is(err, lock.ErrNotHeld) {
			return err == nil, err
		}
		st.want = nil
	}
	lease, _, err := l.acquire(ctx, l.wantKey())
	if err != nil {
		return false, err
	}
	st.want = &lease
	l.log.Info("leadership: asking the holder for a handoff")
	return true, nil
}

// afterAcquire updates the asker's count of failed acquires and gives the request up
// after askFailLimit in a row, or at once when the acquire was not answered in time.
// Any won lease ends the request.
func (l *Leadership) afterAcquire(ctx context.Context, st *campaignState, asking bool, err error) {
	if err == nil {
		st.wantFails = 0
		l.dropWant(ctx, st)
		return
	}
	if !asking {
		return
	}
	st.wantFails++
	if st.wantFails < askFailLimit && !errors.Is(err, errNoAnswer) {
		return
	}
	l.log.Info("leadership: giving the handoff request up; not asking again for a TTL",
		zap.Int("failed_acquires", st.wantFails), zap.Error(err))
	st.wantFails = 0
	st.quietUntil = time.Now().Add(l.conf.TTL)
	l.dropWant(ctx, st)
}

// dropWant releases our want-lock, if we hold one.
func (l *Leadership) dropWant(ctx context.Context, st *campaignState) {
	if st.want == nil {
		return
	}
	l.release(ctx, *st.want, "want-lock")
	st.want = nil
}

// shouldYield is the holder's check after a renewal: someone else asks, renewed the
// request within askFreshWithin campaign intervals (a dead asker's want-lock outlives
// it by a TTL, and yielding to it would leave the lease unled), and we do not prefer
// the lease ourselves. Any failure keeps the lease.
func (l *Leadership) shouldYield(ctx context.Context) (bool, error) {
	s := &l.conf
	w, err := call(&l.bg, ctx, s.CampaignEvery, "inspect want-lock", func(ctx context.Context) (lock.Holder, error) {
		return s.Lock.Inspect(ctx, l.wantKey())
	})
	if err != nil || !w.Held() || w.Owner == s.Owner {
		return false, fatalOnly(err)
	}
	if w.TTL <= s.TTL-askFreshWithin*s.CampaignEvery {
		l.log.Debug("leadership: ignoring a stale handoff request", zap.String("asker", w.Owner))
		return false, nil
	}
	prefer, err := call(&l.bg, ctx, s.CampaignEvery, "Prefer", s.Prefer)
	if err != nil || prefer {
		if err != nil && !isFatal(err) {
			l.log.Warn("leadership: Prefer failed; keeping the lease", zap.Error(err))
		}
		return false, fatalOnly(err)
	}
	l.log.Info("leadership: yielding to a replica that asked", zap.String("asker", w.Owner))
	return true, nil
}

func fatalOnly(err error) error {
	if isFatal(err) {
		return err
	}
	return nil
}
