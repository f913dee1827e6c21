package leader

import (
	"context"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/internal/wait"
	"github.com/servicewright/servicewright/lock"
)

// wakeJitter bounds the random wait between a release notice and the campaign it
// starts, so that the replicas woken together do not all reach the lock in the same
// instant. Acquire decides between them either way.
const wakeJitter = 5 * time.Millisecond

// watcher is the campaign's watch on release notices of the lease. Its zero value
// watches nothing: the campaign polls.
type watcher struct {
	notices <-chan struct{}
	stop    func()
	tried   bool // a watch was attempted (a failure is logged once)
	woken   bool // the latest pause was cut short by a notice
}

// watch starts the watch unless Config.Poll says not to, the lock is a
// lock.Notifier and no watch is in place yet. A failure is logged and the campaign
// polls; the next pause tries again.
func (l *Leadership) watch(ctx context.Context, w *watcher) {
	if w.notices != nil || l.conf.Poll {
		return
	}
	n, ok := l.conf.Lock.(lock.Notifier)
	if !ok {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, l.conf.CampaignEvery) // as every campaign call
	defer cancel()
	notices, stop, err := n.WatchReleases(wctx, l.conf.Key, l.conf.Owner)
	if err != nil {
		if !w.tried {
			l.log.Warn("leadership: cannot watch release notices; campaigning every CampaignEvery", zap.Error(err))
		}
		w.tried = true
		return
	}
	w.notices, w.stop, w.tried = notices, stop, true
}

// unwatch ends the watch, if one is in place.
func (w *watcher) unwatch() {
	if w.stop != nil {
		w.stop()
	}
	*w = watcher{}
}

// pause waits d before the next campaign and reports true, or reports false as soon
// as quit is closed. A release notice cuts the wait short: the campaign then starts
// after a jitter of up to wakeJitter. A notice that came while this replica was
// campaigning or leading still counts (the lease may have been freed since it
// looked); each notice starts at most one campaign, and a campaign it starts that
// loses is followed by a wait (see afterLoss), so notices never make a replica spin:
// it campaigns at most once per release besides its own interval.
func (l *Leadership) pause(ctx context.Context, d time.Duration, w *watcher) bool {
	l.watch(ctx, w)
	ok, woken := wait.SleepOrWake(d, l.quit, w.notices) // nil notices while not watching
	w.woken = woken
	if !woken {
		return ok
	}
	return wait.Sleep(rand.N(wakeJitter+1), l.quit)
}

// afterLoss is the wait before the next campaign after one that did not win. A
// campaign that queued on the lock (lock.Waiter) until its wait passed has waited
// already: the next starts at once. One that a release notice started draws its
// wait from [0, CampaignEvery): every waiter was woken by the same notice, and a
// full interval from that one moment would keep them in lock-step, so that a crash
// (which sends no notice) would land on average half an interval from anyone's
// next campaign, however many replicas campaign.
func (l *Leadership) afterLoss(st *campaignState, w *watcher) time.Duration {
	switch {
	case st.waited:
		return 0
	case w.woken:
		return rand.N(l.conf.CampaignEvery)
	}
	return l.campaignWait()
}
