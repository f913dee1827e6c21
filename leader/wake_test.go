package leader

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/lock"
)

// deafLock announces nothing although it says it does: every notice is lost.
type deafLock struct{ lock.Lock }

func (deafLock) WatchReleases(context.Context, string, string) (<-chan struct{}, func(), error) {
	return make(chan struct{}), func() {}, nil
}

// spyNotifier is a spyLock that passes watches on to the lock it wraps.
type spyNotifier struct{ *spyLock }

func (s spyNotifier) WatchReleases(ctx context.Context, key, self string) (<-chan struct{}, func(), error) {
	return s.Lock.(lock.Notifier).WatchReleases(ctx, key, self)
}

// Timings of the wake tests: a CampaignEvery long enough that a wake shows.
const wCE = 10 * time.Second

func wSpec(lk lock.Lock, owner string) Config {
	s := vSpec(lk, owner)
	s.CampaignEvery, s.TTL, s.RenewEvery = wCE, 40*time.Second, 10*time.Second
	return s
}

// handOver starts a leader "a" whose lead returns when release is closed, then
// waiters, and returns once a leads and the waiters have campaigned once.
func handOver(t *testing.T, lk lock.Lock, poll bool, waiters ...string) (release chan struct{}, rs []*replica) {
	release = make(chan struct{})
	var g termLog
	a := startReplica(t, wSpec(lk, "a"), func(_ context.Context, term *Term) error {
		g.finish(g.begin(term))
		<-release
		return nil
	})
	synctest.Wait()
	if !a.held() {
		t.Fatal("a does not lead")
	}
	for _, w := range waiters {
		s := wSpec(lk, w)
		s.Poll = poll
		rs = append(rs, startReplica(t, s, (&termLog{}).untilEnded))
	}
	time.Sleep(time.Second) // the waiters' first campaigns find the lease held
	return release, append([]*replica{a}, rs...)
}

func TestWakeOnRelease(t *testing.T) {
	t.Run("a release wakes a waiting replica without waiting CampaignEvery", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release, rs := handOver(t, lock.NewMemory(), false, "b")
			close(release)
			time.Sleep(wakeJitter + time.Millisecond)
			if !rs[1].held() {
				t.Fatalf("b does not lead %v after the release (CampaignEvery %v)", wakeJitter+time.Millisecond, wCE)
			}
			if rs[0].held() {
				t.Fatal("a leads again: it woke on its own release")
			}
		})
	})

	for _, c := range []struct {
		name string
		lk   func() lock.Lock
		poll bool
	}{
		{"a dropped notice still elects within CampaignEvery", func() lock.Lock { return deafLock{lock.NewMemory()} }, false},
		{"Poll campaigns every CampaignEvery only", func() lock.Lock { return lock.NewMemory() }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release, rs := handOver(t, c.lk(), c.poll, "b")
				close(release)
				time.Sleep(wCE / 2)
				if rs[1].held() {
					t.Fatal("b leads before any campaign of its own could have run")
				}
				time.Sleep(wCE / 2)
				if !rs[1].held() {
					t.Fatalf("b does not lead within CampaignEvery (%v) of the release", wCE)
				}
			})
		})
	}

	t.Run("a woken replica that loses waits a random part of CampaignEvery, then full ones: no spin", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spy := spyNotifier{&spyLock{Lock: lock.NewMemory()}}
			release, rs := handOver(t, spy, false, "b", "c")
			close(release)
			const watch = 6 * wCE
			time.Sleep(watch)
			var loser string
			switch {
			case rs[1].held() && !rs[2].held():
				loser = "c"
			case rs[2].held() && !rs[1].held():
				loser = "b"
			default:
				t.Fatalf("leaders: b %v, c %v; want exactly one", rs[1].held(), rs[2].held())
			}
			// At most: the campaign before the release, the woken one, the one
			// after a random part of CampaignEvery, and one per 0.8 × CampaignEvery
			// after it.
			if n, most := len(spy.find("acquire", "job", loser, false)), 3+int(watch/(wCE*8/10)); n > most {
				t.Fatalf("%s sent %d acquires in %v, want at most %d", loser, n, watch, most)
			}
		})
	})
}

func TestHandoffWakesTheAsker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lk := lock.NewMemory() // announces releases
		start := time.Now()
		var ga, gb termLog
		s := handoffSpec(lk, "a", false)
		s.CampaignEvery = wCE
		startReplica(t, s, ga.untilEnded)
		synctest.Wait()
		s = handoffSpec(lk, "b", true)
		s.CampaignEvery = wCE
		b := startReplica(t, s, gb.untilEnded)
		time.Sleep(2 * vRenew)
		at, bt := ga.all(), gb.all()
		if len(at) != 1 || at[0].end.IsZero() {
			t.Fatalf("a's terms %v; want one, yielded", at)
		}
		yielded := at[0].end
		if len(bt) != 1 || !b.held() {
			t.Fatalf("b's terms %v; want b leading", bt)
		}
		// The yield's release wakes the asker: it leads within the wake jitter, not
		// at its next campaign.
		if d := bt[0].begin.Sub(yielded); d > wakeJitter {
			t.Fatalf("b led %v after a yielded (at %v from start); want within %v", d, yielded.Sub(start), wakeJitter)
		}
	})
}
