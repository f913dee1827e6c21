package leader

import (
	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
)

func TestClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spy := &spyLock{Lock: lock.NewMemory()}
		var claims atomic.Int32
		s := vSpec(spy, "a")
		s.Claim = func(_ context.Context, term *Term) (bool, error) {
			return claims.Add(1) == 3, nil // the store refuses the first two tokens
		}
		var g termLog
		r := startReplica(t, s, g.untilEnded)
		time.Sleep(2*vCE + time.Millisecond)
		terms := g.all()
		if claims.Load() != 3 || len(terms) != 1 || terms[0].token != 3 {
			t.Fatalf("claims=%d terms=%v; want lead to run once, in the third term", claims.Load(), terms)
		}
		if r.ended(reasonUnclaimed) != 2 {
			t.Fatalf("unclaimed=%v", r.ended(reasonUnclaimed))
		}
		if rel := spy.find("release", "job", "a", true); len(rel) != 2 {
			t.Fatalf("%d releases; each unclaimed term releases its lease", len(rel))
		}
	})
}

func TestBodyFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		fail func() error
	}{
		{"error", func() error { return errors.New("store unreachable") }},
		{"panic", func() error { panic("nil map") }},
	} {
		t.Run(c.name+" is released and restarted after a growing backoff", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				spy := &spyLock{Lock: lock.NewMemory()}
				var g termLog
				s := vSpec(spy, "a")
				s.CampaignEvery = 10 * time.Second // far above the backoff, so the backoff shows
				s.TTL, s.RenewEvery = 40*time.Second, 10*time.Second
				s.Retry = entrypoint.Backoff{Initial: time.Second, Max: 8 * time.Second}
				r := startReplica(t, s, func(_ context.Context, term *Term) error {
					g.finish(g.begin(term))
					return c.fail()
				})
				time.Sleep(4 * time.Second)
				terms := g.all()
				if len(terms) < 3 {
					t.Fatalf("terms %v", terms)
				}
				for i, lo := range []time.Duration{500 * time.Millisecond, time.Second} {
					d := terms[i+1].begin.Sub(terms[i].end)
					if d < lo || d > 2*lo {
						t.Fatalf("restart %d after %v, want in [%v, %v]", i+1, d, lo, 2*lo)
					}
				}
				if r.ended(reasonFailed) < 3 || len(spy.find("release", "job", "a", true)) < 3 {
					t.Fatalf("failed=%v; each failed term is released", r.ended(reasonFailed))
				}
				if r.logs.FilterMessageSnippet("lead failed").Len() < 3 || r.l.Halted() != nil {
					t.Fatal("failures not logged, or campaigning halted")
				}
			})
		})
	}
}

func TestConfigErrorStopsCampaigning(t *testing.T) {
	errNoTable := errors.New("store has no digests table")
	cfgErr := fault.Permanent(errNoTable)
	for _, c := range []struct {
		name  string
		setup func(s *Config, lead *func(context.Context, *Term) error)
		want  error
	}{
		{"from lead", func(_ *Config, lead *func(context.Context, *Term) error) {
			*lead = func(context.Context, *Term) error { return cfgErr }
		}, errNoTable},
		{"from Claim, as a ConfigError", func(s *Config, _ *func(context.Context, *Term) error) {
			s.Claim = func(context.Context, *Term) (bool, error) {
				return false, &fault.ConfigError{Problems: []fault.Problem{{Field: "DATABASE_URL", Reason: "wrong database"}}}
			}
		}, nil},
		{"from MayCampaign", func(s *Config, _ *func(context.Context, *Term) error) {
			s.MayCampaign = func(context.Context) (bool, error) { return false, cfgErr }
		}, errNoTable},
		{"from Prefer", func(s *Config, _ *func(context.Context, *Term) error) {
			s.Handoff, s.Prefer = true, func(context.Context) (bool, error) { return false, cfgErr }
		}, errNoTable},
		{"a fence floor the lock cannot pass", func(s *Config, _ *func(context.Context, *Term) error) {
			s.RequiresFenceAdvance = true
			s.FenceFloor = func(context.Context) (uint64, error) { return lock.MaxToken, nil }
		}, lock.ErrFenceOutOfRange},
		{"no floor at all", func(s *Config, _ *func(context.Context, *Term) error) {
			s.RequiresFenceAdvance = true
			s.FenceFloor = func(context.Context) (uint64, error) { return 0, fmt.Errorf("no row: %w", lock.ErrFenceOutOfRange) }
		}, lock.ErrFenceOutOfRange},
		{"an exhausted counter", func(s *Config, _ *func(context.Context, *Term) error) {
			_ = s.Lock.AdvanceFence(context.Background(), s.Key, lock.MaxToken-1)
			l, _ := s.Lock.Acquire(context.Background(), s.Key, "other", time.Second)
			_ = s.Lock.Release(context.Background(), l)
		}, lock.ErrFenceExhausted},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				spy := &spyLock{Lock: lock.NewMemory()}
				s := vSpec(spy, "a")
				var g termLog
				lead := g.untilEnded
				c.setup(&s, &lead)
				r := startReplica(t, s, lead)
				time.Sleep(2 * vCE)
				calls := spy.count()
				time.Sleep(30 * vCE)
				if n := spy.count(); n != calls {
					t.Fatalf("%d lock calls after campaigning stopped", n-calls)
				}
				err := r.l.Halted()
				if _, isCfg := errors.AsType[*fault.ConfigError](err); err == nil || (c.want != nil && !errors.Is(err, c.want)) || (c.want == nil && !isCfg) {
					t.Fatalf("Halted = %v, want %v", err, c.want)
				}
				if n := criticalLogs(r.logs); n != 1 {
					t.Fatalf("%d critical logs", n)
				}
				if h, _ := spy.Inspect(context.Background(), "job"); h.Owner == "a" {
					t.Fatal("the halted replica kept the lease")
				}
				select {
				case err := <-r.served:
					t.Fatalf("Serve returned %v: the process must stay up", err)
				default:
				}
			})
		})
	}
}

func TestAcquireIsNeverCancelled(t *testing.T) {
	t.Run("an acquire that lands after the campaign stopped waiting is released", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int32
			spy := &spyLock{Lock: lock.NewMemory(), acquire: func(ctx context.Context, _, _ string) (error, bool) {
				if n.Add(1) == 1 {
					time.Sleep(vCE * 3 / 2) // past the campaign's wait; ctx is not cancelled
					return ctx.Err(), false
				}
				return nil, false
			}}
			var g termLog
			startReplica(t, vSpec(spy, "a"), g.untilEnded)
			time.Sleep(3 * vCE)
			rel := spy.find("release", "job", "a", true)
			if len(rel) != 1 || rel[0].token != 1 {
				t.Fatalf("releases %v; want the late token 1 released", rel)
			}
			if terms := g.all(); len(terms) != 1 || terms[0].token != 2 {
				t.Fatalf("terms %v; want one, with token 2 from a later campaign", terms)
			}
		})
	})

	t.Run("an acquire whose answer was lost after it landed is released", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int32
			spy := &spyLock{Lock: lock.NewMemory(), acquire: func(context.Context, string, string) (error, bool) {
				if n.Add(1) == 1 {
					return errors.New("i/o timeout"), true // lands, then the answer is lost
				}
				return nil, false
			}}
			var g termLog
			startReplica(t, vSpec(spy, "a"), g.untilEnded)
			time.Sleep(2 * vCE)
			if rel := spy.find("release", "job", "a", true); len(rel) != 1 || rel[0].token != 1 {
				t.Fatalf("releases %v; want the orphan token 1 released", rel)
			}
			if terms := g.all(); len(terms) != 1 || terms[0].token != 2 {
				t.Fatalf("terms %v", terms)
			}
		})
	})
}

func TestMayCampaign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var may atomic.Bool
		spy := &spyLock{Lock: lock.NewMemory()}
		s := vSpec(spy, "a")
		s.MayCampaign = func(context.Context) (bool, error) {
			if !may.Load() {
				return false, errors.New("maintenance")
			}
			return true, nil
		}
		var g termLog
		startReplica(t, s, g.untilEnded)
		time.Sleep(10 * vCE)
		if n := len(spy.find("acquire", "", "", false)) + len(g.all()); n != 0 {
			t.Fatal("campaigned while MayCampaign refused")
		}
		may.Store(true)
		time.Sleep(vCE)
		if len(g.all()) != 1 {
			t.Fatal("no term once MayCampaign allowed it")
		}
	})
}

func TestFenceFloor(t *testing.T) {
	for _, c := range []struct {
		name  string
		floor func(context.Context) (uint64, error)
		token uint64
	}{
		{"advances the counter past the store's fence", func(context.Context) (uint64, error) { return 100, nil }, 101},
		{"an unreadable floor is skipped", func(context.Context) (uint64, error) { return 0, errors.New("timeout") }, 1},
		{"a floor not read in time is skipped", func(ctx context.Context) (uint64, error) {
			time.Sleep(2 * vCE) // ignores ctx
			return 100, nil
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := vSpec(lock.NewMemory(), "a")
				s.RequiresFenceAdvance, s.FenceFloor = true, c.floor
				var g termLog
				r := startReplica(t, s, g.untilEnded)
				time.Sleep(2 * vCE)
				if terms := g.all(); len(terms) != 1 || terms[0].token != c.token || r.l.Halted() != nil {
					t.Fatalf("terms %v, halted %v; want one with token %d", terms, r.l.Halted(), c.token)
				}
			})
		})
	}
}
