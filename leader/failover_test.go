package leader

import (
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// Real-time timings against a real Redis: life = 1200 − 200 − 200 − 100 = 700ms.
const (
	rTTL = 1200 * time.Millisecond
	rCE  = 100 * time.Millisecond
)

func rSpec(lock lock.Lock, key, owner string) Config {
	return Config{Lock: lock, Key: key, Owner: owner, TTL: rTTL, CampaignEvery: rCE, RenewEvery: 300 * time.Millisecond,
		YieldGrace: 200 * time.Millisecond, ReleaseTimeout: 100 * time.Millisecond, Margin: 200 * time.Millisecond}
}

// waitFor polls cond every millisecond until it holds or d passes; it reports when
// cond first held. Only for waiting on real-time effects outside the process's
// control (a Redis lease lapsing, a server restarting).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Now()
}

func holders(rs []*replica) []int {
	var h []int
	for i, r := range rs {
		if r.held() {
			h = append(h, i)
		}
	}
	return h
}

// cutLock is a lock.Lock the test can cut off, as a crash or a partition would.
type cutLock struct {
	lock.Lock
	down atomic.Bool
}

var errCut = errors.New("test: cut off from the lock")

func (c *cutLock) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (lock.Lease, error) {
	if c.down.Load() {
		return lock.Lease{}, errCut
	}
	return c.Lock.Acquire(ctx, key, owner, ttl)
}

func (c *cutLock) Renew(ctx context.Context, l lock.Lease) error {
	if c.down.Load() {
		return errCut
	}
	return c.Lock.Renew(ctx, l)
}

func (c *cutLock) Release(ctx context.Context, l lock.Lease) error {
	if c.down.Load() {
		return errCut
	}
	return c.Lock.Release(ctx, l)
}

// WatchReleases passes the watch on when the wrapped lock announces releases.
func (c *cutLock) WatchReleases(ctx context.Context, key, self string) (<-chan struct{}, func(), error) {
	if n, ok := c.Lock.(lock.Notifier); ok {
		return n.WatchReleases(ctx, key, self)
	}
	return nil, nil, errors.ErrUnsupported
}

// measureFailover starts three replicas, ends the leader's part (gracefully, by
// draining it, or as a crash, by cutting it off from Redis) and returns how long the
// others were without a leader.
func measureFailover(t *testing.T, lk lock.Lock, crash bool) time.Duration {
	return measureFailoverWith(t, lk, crash, func(c *Config) {})
}

// measureFailoverWith is measureFailover with the replicas' Config changed by set.
func measureFailoverWith(t *testing.T, lk lock.Lock, crash bool, set func(*Config)) time.Duration {
	key := keyFor(t, "")
	var rs []*replica
	var cut []*cutLock
	for _, owner := range []string{"a", "b", "c"} {
		cl := &cutLock{Lock: lk}
		cut = append(cut, cl)
		var g termLog
		c := rSpec(cl, key, owner)
		set(&c)
		rs = append(rs, startReplica(t, c, g.untilEnded))
	}
	waitFor(t, 5*time.Second, "a first leader", func() bool { return len(holders(rs)) == 1 })
	// Not a synchronisation: the replicas campaigned together at start; let their
	// jittered campaigns drift apart as in a fleet that has run for a while.
	time.Sleep(rTTL / 2)
	old := holders(rs)[0]
	others := slices.Delete(slices.Clone(rs), old, old+1)
	var gone time.Time
	if crash {
		gone = time.Now()
		cut[old].down.Store(true)
	} else {
		rs[old].shutdown()
		gone = time.Now() // the release is done when Drain returns
	}
	// A failure timeout, not the bound: the callers judge took.
	took := waitFor(t, 10*(rTTL+2*time.Second), "a new leader", func() bool { return len(holders(others)) == 1 }).Sub(gone)
	if crash {
		cut[old].down.Store(false) // so that cleanup can release
	}
	return took
}

// backend is a real lock backend the leadership suite runs against.
type backend struct {
	name          string
	lock          func(t *testing.T) lock.Lock // a lock on it, as another process would open
	kill, restart func() error
	// lapse is how long a silent holder's lease of rTTL lives on the backend when
	// that is longer than rTTL (etcd: whole seconds); 0 for rTTL.
	lapse time.Duration
}

func backends(t *testing.T) []backend {
	r, pg := env.Redis(t), env.Postgres(t)
	return []backend{
		{name: "redis", lock: func(t *testing.T) lock.Lock { return newRedisLock(t, r) }, kill: r.Kill, restart: r.Restart},
		{name: "postgres", lock: func(t *testing.T) lock.Lock { return newPGLock(t, pg) }, kill: pg.Kill, restart: pg.Restart},
		etcdBackend(t),
		kubeBackend(t),
	}
}

// TestBackendLeadership runs the leadership suite on each real backend.
func TestBackendLeadership(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { leadershipSuite(t, b) })
	}
}

func leadershipSuite(t *testing.T, b backend) {
	lk := b.lock(t)

	t.Run("exactly one of three replicas leads at every sample", func(t *testing.T) {
		key := keyFor(t, "")
		var rs []*replica
		var logs []*termLog
		for _, owner := range []string{"a", "b", "c"} {
			g := &termLog{}
			logs = append(logs, g)
			rs = append(rs, startReplica(t, rSpec(lk, key, owner), g.untilEnded))
		}
		waitFor(t, 5*time.Second, "a leader", func() bool { return len(holders(rs)) > 0 })
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if h := holders(rs); len(h) != 1 {
				t.Fatalf("holders %v", h)
			}
		}
		terms := 0
		for _, g := range logs {
			terms += len(g.all())
		}
		if terms != 1 {
			t.Fatalf("%d terms in a steady fleet, want 1", terms)
		}
	})

	t.Run("graceful failover within CampaignEvery", func(t *testing.T) {
		took := measureFailover(t, lk, false)
		t.Logf("graceful failover: %v (target CampaignEvery %v + 50ms)", took, rCE)
		// A sanity bound, 10× the expected CampaignEvery + 100ms, for a loaded machine
		// on a real backend: the figure is make bench's (leader fleet figures), and the
		// campaign cadence and the hand-over are exact in virtual time
		// (TestCampaignCadence, TestHandoff, TestWakeOnRelease).
		if took > 10*(rCE+100*time.Millisecond) {
			t.Fatalf("graceful failover took %v", took)
		}
	})

	t.Run("graceful failover at the default CampaignEvery takes a release notice, not a campaign", func(t *testing.T) {
		took := measureFailoverWith(t, lk, false, func(c *Config) { c.CampaignEvery = DefaultCampaignEvery })
		t.Logf("graceful failover with wake on release: %v (CampaignEvery %v)", took, DefaultCampaignEvery)
		// The first campaign after the release would come at 0.8 × CampaignEvery
		// (1.6s); the notice takes milliseconds, so this is also a sanity bound more
		// than 10× the expected time.
		if took >= DefaultCampaignEvery*8/10 {
			t.Fatalf("graceful failover took %v: the release notice did not wake the waiting replicas", took)
		}
	})

	t.Run("crash failover within TTL + CampaignEvery", func(t *testing.T) {
		took := measureFailover(t, lk, true)
		ttl := max(rTTL, b.lapse)
		t.Logf("crash failover: %v (target TTL %v + CampaignEvery %v)", took, ttl, rCE)
		// A sanity bound, 10× the expected TTL + CampaignEvery, for a loaded machine on
		// a real backend: the figure is make bench's (leader fleet figures), and a
		// term's end before its lease lapses and the campaigns after it are exact in
		// virtual time (TestTermEndsBeforeLeaseLapses, TestCampaignCadence).
		if took > 10*(ttl+rCE) {
			t.Fatalf("crash failover took %v", took)
		}
	})

	t.Run("the backend killed under the leader: it stops before TTL − Margin and resumes", func(t *testing.T) {
		key := keyFor(t, "")
		var g termLog
		a := startReplica(t, rSpec(lk, key, "a"), g.untilEnded)
		waitFor(t, 5*time.Second, "a leads", func() bool { return len(g.all()) > 0 })
		killed := time.Now()
		if err := b.kill(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.restart() }) // whatever happens here, later tests need the backend
		waitFor(t, 5*time.Second, "the term to end", func() bool { ts := g.all(); return !ts[0].end.IsZero() })
		s := a.l.Config()
		if d := g.all()[0].end.Sub(killed); d >= s.TTL-s.Margin {
			t.Fatalf("led %v after the backend died, want less than TTL − Margin = %v", d, s.TTL-s.Margin)
		} else {
			t.Logf("stopped leading %v after the backend died (soft deadline: at most %v)", d, s.TTL-s.Margin-s.YieldGrace-s.ReleaseTimeout)
		}
		// Redis: no renewal answers, the term expires. PostgreSQL: the renewal finds
		// the session gone, the lease is lost.
		waitFor(t, time.Second, "the term counted as expired or lost", func() bool { return a.ended(reasonExpired)+a.ended(reasonLost) == 1 })
		if err := b.restart(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "leading again after the backend returned", func() bool { return len(g.all()) == 2 && a.held() })
	})
}

// fenceStore is a store that refuses stale leaders: a term claims its token strictly
// (fence < token), and later writes accept an equal one (fence <= token).
type fenceStore struct {
	fence   atomic.Uint64
	refused atomic.Int32
}

func (s *fenceStore) claim(_ context.Context, term *Term) (bool, error) {
	for {
		f := s.fence.Load()
		if f >= term.Token {
			s.refused.Add(1)
			return false, nil
		}
		if s.fence.CompareAndSwap(f, term.Token) {
			return true, nil
		}
	}
}

func (s *fenceStore) floor(context.Context) (uint64, error) { return s.fence.Load(), nil }

func TestRedisFencingAfterDataLoss(t *testing.T) {
	r := env.Redis(t)
	lk := newRedisLock(t, r)
	key := keyFor(t, "")
	store := &fenceStore{}
	spec := rSpec(lk, key, "a")
	spec.Claim = store.claim
	if err := lk.AdvanceFence(context.Background(), key, 20); err != nil {
		t.Fatal(err)
	}
	var g termLog
	a := startReplica(t, spec, g.untilEnded)
	waitFor(t, 5*time.Second, "a claims", func() bool { return store.fence.Load() == 21 })
	a.shutdown()

	restart := func() {
		t.Helper()
		if err := r.Restart(); err != nil { // no persistence: leases and counters are gone
			t.Fatal(err)
		}
	}

	t.Run("without FenceFloor, claims are refused until the counter catches up", func(t *testing.T) {
		restart()
		s := rSpec(lk, key, "b")
		s.Claim = store.claim
		var g termLog
		b := startReplica(t, s, g.untilEnded)
		waitFor(t, 10*time.Second, "the counter to catch up", func() bool { return store.fence.Load() == 22 })
		if n := store.refused.Load(); n < 20 || b.ended(reasonUnclaimed) < 20 {
			t.Fatalf("%d claims refused, %v terms unclaimed; want one per token up to the store's fence", n, b.ended(reasonUnclaimed))
		}
		b.shutdown()
	})

	t.Run("with FenceFloor, the first term after the loss claims at once", func(t *testing.T) {
		restart()
		refused := store.refused.Load()
		s := rSpec(lk, key, "c")
		s.Claim, s.FenceFloor, s.RequiresFenceAdvance = store.claim, store.floor, true
		var g termLog
		startReplica(t, s, g.untilEnded)
		// The term is logged once lead starts, which is after its claim: wait for that,
		// not for the lease, which is held a moment before.
		waitFor(t, 5*time.Second, "c to lead", func() bool { return len(g.all()) > 0 })
		if terms := g.all(); len(terms) != 1 || terms[0].token != 23 || store.refused.Load() != refused {
			t.Fatalf("terms %v, %d refused; want the first term to claim token 23", terms, store.refused.Load()-refused)
		}
	})
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func TestPostgresCrashFailover(t *testing.T) {
	pg := env.Postgres(t)
	key := keyFor(t, "")
	const ttl = 5 * time.Second
	var (
		rs    []*replica
		locks []interface{ Close(context.Context) error }
	)
	for _, owner := range []string{"a", "b", "c"} {
		lk := newPGLock(t, pg) // one per replica, as one per process
		locks = append(locks, lk)
		c := rSpec(lk, key, owner)
		c.TTL = ttl
		rs = append(rs, startReplica(t, c, (&termLog{}).untilEnded))
	}
	waitFor(t, 5*time.Second, "a first leader", func() bool { return len(holders(rs)) == 1 })
	old := holders(rs)[0]
	// The process dies: its connections close, and the server frees the lease.
	if err := locks[old].Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	gone := time.Now()
	others := slices.Delete(slices.Clone(rs), old, old+1)
	took := waitFor(t, ttl, "a new leader", func() bool { return len(holders(others)) == 1 }).Sub(gone)
	t.Logf("crash failover on PostgreSQL: %v (CampaignEvery %v, TTL %v)", took, rCE, ttl)
	if took >= ttl/2 {
		t.Fatalf("a new leader after %v: the lease was not freed with the connection", took)
	}
}
