package leader

import (
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func handoffSpec(lock lock.Lock, owner string, prefer bool) Config {
	s := vSpec(lock, owner)
	s.Handoff = true
	s.Prefer = func(context.Context) (bool, error) { return prefer, nil }
	return s
}

func TestHandoff(t *testing.T) {
	t.Run("the holder yields at its next renewal to a replica that asks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spy := &spyLock{Lock: lock.NewMemory()}
			start := time.Now()
			var ga, gb termLog
			a := startReplica(t, handoffSpec(spy, "a", false), ga.untilEnded)
			synctest.Wait()
			b := startReplica(t, handoffSpec(spy, "b", true), gb.untilEnded)
			time.Sleep(30 * vCE)
			at, bt := ga.all(), gb.all()
			if len(at) != 1 || at[0].end.Sub(start) != vRenew || a.ended(reasonYielded) != 1 {
				t.Fatalf("a's terms %v, yielded=%v; want one, yielded at its first renewal", at, a.ended(reasonYielded))
			}
			if len(bt) != 1 || bt[0].begin.Sub(start) <= vRenew || bt[0].begin.Sub(start) > vRenew+vCE || !b.held() {
				t.Fatalf("b's terms %v; want b leading within a campaign interval of the yield", bt)
			}
			if h, _ := spy.Inspect(context.Background(), "job:want"); h.Held() {
				t.Fatalf("want-lock %+v still held by the new leader", h)
			}
		})
	})

	t.Run("a holder that prefers itself keeps the lease", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := lock.NewMemory()
			var ga, gb termLog
			a := startReplica(t, handoffSpec(mem, "a", true), ga.untilEnded)
			synctest.Wait()
			startReplica(t, handoffSpec(mem, "b", true), gb.untilEnded)
			time.Sleep(30 * vCE)
			if len(ga.all()) != 1 || len(gb.all()) != 0 || !a.held() {
				t.Fatalf("a's terms %v, b's %v", ga.all(), gb.all())
			}
			if h, _ := mem.Inspect(context.Background(), "job:want"); h.Owner != "b" {
				t.Fatalf("want-lock %+v; b keeps asking", h)
			}
		})
	})

	for _, c := range []struct {
		name    string
		renewAt time.Duration // when the silent asker last renews its request; 0: never
		yields  bool
	}{
		{"a request not renewed within two campaign intervals is ignored", 0, false},
		{"an asker that cannot take the lease leaves it unled for four intervals at most", vRenew - vCE/2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lock.NewMemory()
				start := time.Now()
				var g termLog
				a := startReplica(t, handoffSpec(mem, "a", false), g.untilEnded)
				synctest.Wait() // a leads; then a replica that will go silent asks
				want, err := mem.Acquire(context.Background(), "job:want", "ghost", vTTL)
				if err != nil {
					t.Fatal(err)
				}
				if c.renewAt > 0 {
					time.Sleep(c.renewAt)
					if err := mem.Renew(context.Background(), want); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(30*vCE - time.Since(start))
				terms := g.all()
				if !c.yields {
					if len(terms) != 1 || a.ended(reasonYielded) != 0 {
						t.Fatalf("terms %v; want one, never yielded", terms)
					}
					return
				}
				if len(terms) != 2 || terms[0].end.Sub(start) != vRenew {
					t.Fatalf("terms %v; want a yield at the first renewal, then a second term", terms)
				}
				// Stand aside from the first campaign that sees the lease free: three
				// intervals, plus up to one each to see it and to campaign after.
				if gap := terms[1].begin.Sub(terms[0].end); gap < 3*vCE || gap > 5*vCE {
					t.Fatalf("unled for %v, want within [3, 5] campaign intervals", gap)
				}
			})
		})
	}

	t.Run("an asker gives up after three failed acquires and does not ask again for a TTL", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spy := &spyLock{Lock: lock.NewMemory(), acquire: func(_ context.Context, key, _ string) (error, bool) {
				if key == "job" {
					return errors.New("READONLY replica"), false
				}
				return nil, false
			}}
			var g termLog
			startReplica(t, handoffSpec(spy, "b", true), g.untilEnded)
			time.Sleep(20 * vCE)
			asks := spy.find("acquire", "job:want", "b", true)
			gaveUp := spy.find("release", "job:want", "b", true)
			if len(asks) != 2 || len(gaveUp) < 1 {
				t.Fatalf("want acquires %v, releases %v", asks, gaveUp)
			}
			fails := spy.find("acquire", "job", "b", false)
			if fails[2].at != gaveUp[0].at {
				t.Fatalf("gave up at %v, want right after the third failed acquire at %v", gaveUp[0].at, fails[2].at)
			}
			if d := asks[1].at.Sub(gaveUp[0].at); d < vTTL || d > vTTL+vCE {
				t.Fatalf("asked again %v after giving up, want one TTL (%v) later", d, vTTL)
			}
		})
	})

	t.Run("an asker gives up at once when an acquire is not answered in time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var slow atomic.Bool
			slow.Store(true)
			spy := &spyLock{Lock: lock.NewMemory(), acquire: func(_ context.Context, key, _ string) (error, bool) {
				if key == "job" && slow.CompareAndSwap(true, false) {
					time.Sleep(vCE * 3 / 2) // lands before the next campaign, and is released
				}
				return nil, false
			}}
			start := time.Now()
			var g termLog
			startReplica(t, handoffSpec(spy, "b", true), g.untilEnded)
			time.Sleep(5 * vCE)
			gaveUp := spy.find("release", "job:want", "b", true)
			if len(gaveUp) != 1 || gaveUp[0].at.Sub(start) != vCE {
				t.Fatalf("want releases %v; want one, at the first acquire's cut-off", gaveUp)
			}
			if n := len(spy.find("acquire", "job:want", "b", true)); n != 1 {
				t.Fatalf("asked %d times within a TTL", n)
			}
			if terms := g.all(); len(terms) != 1 || terms[0].token != 2 {
				t.Fatalf("terms %v; want one with token 2, the late token 1 released", terms)
			}
		})
	})

	for _, c := range []struct {
		name  string
		setup func(s *Config, spy *spyLock)
	}{
		{"a failing Prefer campaigns without handoff", func(s *Config, _ *spyLock) {
			s.Prefer = func(context.Context) (bool, error) { return false, errors.New("metrics down") }
		}},
		{"a failing want-lock read campaigns without handoff", func(_ *Config, spy *spyLock) {
			spy.inspect = func(_ context.Context, key string) error {
				if key == "job:want" {
					return errors.New("timeout")
				}
				return nil
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lock.NewMemory()
				if _, err := mem.Acquire(context.Background(), "job:want", "ghost", time.Hour); err != nil {
					t.Fatal(err)
				}
				spy := &spyLock{Lock: mem}
				s := handoffSpec(spy, "c", false)
				c.setup(&s, spy)
				start := time.Now()
				var g termLog
				startReplica(t, s, g.untilEnded)
				time.Sleep(vCE / 2)
				if terms := g.all(); len(terms) != 1 || !terms[0].begin.Equal(start) {
					t.Fatalf("terms %v; want the lease taken at the first campaign", terms)
				}
			})
		})
	}

	t.Run("a replica MayCampaign refuses never asks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := lock.NewMemory()
			var ga termLog
			startReplica(t, handoffSpec(mem, "a", false), ga.untilEnded)
			synctest.Wait()
			spy := &spyLock{Lock: mem}
			s := handoffSpec(spy, "b", true)
			s.MayCampaign = func(context.Context) (bool, error) { return false, nil }
			startReplica(t, s, noLead)
			time.Sleep(10 * vCE)
			if n := len(spy.find("acquire", "", "", false)); n != 0 || len(ga.all()) != 1 {
				t.Fatalf("%d acquires by a replica refused by MayCampaign", n)
			}
		})
	})
}
