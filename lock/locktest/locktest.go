// Package locktest checks that a lock.Lock keeps the contract leadership, singleton
// steps and once-per-fleet cron jobs rely on. Every implementation in this module
// runs it; so can a Lock of your own.
package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/lock"
)

// Harness is what Run needs of a Lock implementation.
type Harness struct {
	// Lock is the lock under test.
	Lock lock.Lock
	// Wrap runs each subtest, for example in a testing/synctest bubble. Default:
	// it calls f(t).
	Wrap func(t *testing.T, f func(*testing.T))
	// Key returns a fresh lock name for a subtest name, so that runs against a
	// shared backend do not see each other's leases and counters. Default: the name.
	Key func(name string) string
	// WaitPast returns once a lease of key acquired with ttl d has lapsed on the
	// backend.
	WaitPast func(t *testing.T, key string, d time.Duration)
}

// Run checks the Lock contract: exclusion, owner-and-token checks on Renew and
// Release, strictly increasing tokens, lapse, AdvanceFence and its limits,
// configuration errors for bad arguments (AcquireExpiring's too, for a
// lock.Expiring), and, for a lock.Notifier, that a release is announced to the other
// owners watching the key and not to the releaser.
func Run(t *testing.T, h Harness) {
	t.Helper()
	lk, wrap, key, waitPast := h.Lock, h.Wrap, h.Key, h.WaitPast
	if wrap == nil {
		wrap = func(t *testing.T, f func(*testing.T)) { f(t) }
	}
	if key == nil {
		key = func(n string) string { return n }
	}
	ctx := context.Background()
	const ttl = time.Minute
	run := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) { wrap(t, f) })
	}

	run("acquire refuses a held lock, to anyone", func(t *testing.T) {
		k := key(t.Name())
		l, err := lk.Acquire(ctx, k, "a", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if l.Key != k || l.Owner != "a" || l.Token != 1 || l.TTL != ttl {
			t.Fatalf("lease = %+v", l)
		}
		for _, owner := range []string{"b", "a"} {
			if _, err := lk.Acquire(ctx, k, owner, ttl); !errors.Is(err, lock.ErrHeld) {
				t.Fatalf("second acquire by %q: err = %v, want lock.ErrHeld", owner, err)
			}
		}
	})

	run("renew and release only with the same owner and token", func(t *testing.T) {
		k := key(t.Name())
		l, err := lk.Acquire(ctx, k, "a:1", ttl) // an owner with a colon
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []lock.Lease{{Key: k, Owner: "a:1", Token: l.Token + 1, TTL: ttl}, {Key: k, Owner: "b", Token: l.Token, TTL: ttl}, {Key: k, Owner: "a", Token: l.Token, TTL: ttl}} {
			if err := lk.Renew(ctx, bad); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("Renew(%+v) = %v, want lock.ErrNotHeld", bad, err)
			}
			if err := lk.Release(ctx, bad); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("Release(%+v) = %v, want lock.ErrNotHeld", bad, err)
			}
		}
		h, err := lk.Inspect(ctx, k)
		if err != nil || h.Owner != "a:1" || h.Token != l.Token || h.TTL <= 0 || h.TTL > ttl || h.Fence != l.Token {
			t.Fatalf("Inspect = %+v, %v; want held by a:1 with token %d", h, err, l.Token)
		}
		if err := lk.Renew(ctx, l); err != nil {
			t.Fatalf("Renew: %v", err)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := lk.Release(ctx, l); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("second Release = %v, want lock.ErrNotHeld", err)
		}
		if h, err := lk.Inspect(ctx, k); err != nil || h.Held() || h.Fence != l.Token {
			t.Fatalf("Inspect after release = %+v, %v; want free with fence %d", h, err, l.Token)
		}
	})

	run("tokens strictly increase across terms", func(t *testing.T) {
		k := key(t.Name())
		var last uint64
		for i := range 5 {
			l, err := lk.Acquire(ctx, k, "a", ttl)
			if err != nil {
				t.Fatal(err)
			}
			if l.Token <= last {
				t.Fatalf("term %d: token %d after %d", i, l.Token, last)
			}
			last = l.Token
			if err := lk.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
	})

	run("a lapsed lease can be taken and no longer renewed", func(t *testing.T) {
		k := key(t.Name())
		short := 50 * time.Millisecond
		old, err := lk.Acquire(ctx, k, "a", short)
		if err != nil {
			t.Fatal(err)
		}
		waitPast(t, k, short)
		nl, err := lk.Acquire(ctx, k, "b", ttl)
		if err != nil {
			t.Fatalf("acquire after lapse: %v", err)
		}
		if nl.Token <= old.Token {
			t.Fatalf("token %d after %d", nl.Token, old.Token)
		}
		if err := lk.Renew(ctx, old); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("renew of the lapsed lease = %v, want lock.ErrNotHeld", err)
		}
	})

	run("advance fence moves the counter up, never down", func(t *testing.T) {
		k := key(t.Name())
		if err := lk.AdvanceFence(ctx, k, 100); err != nil {
			t.Fatal(err)
		}
		if err := lk.AdvanceFence(ctx, k, 50); err != nil {
			t.Fatal(err)
		}
		l, err := lk.Acquire(ctx, k, "a", ttl)
		if err != nil || l.Token != 101 {
			t.Fatalf("acquire after advance = %+v, %v; want token 101", l, err)
		}
	})

	run("fence out of range and exhausted", func(t *testing.T) {
		k := key(t.Name())
		if err := lk.AdvanceFence(ctx, k, lock.MaxToken); !errors.Is(err, lock.ErrFenceOutOfRange) {
			t.Fatalf("advance to lock.MaxToken = %v, want lock.ErrFenceOutOfRange", err)
		}
		if err := lk.AdvanceFence(ctx, k, lock.MaxToken-1); err != nil {
			t.Fatal(err)
		}
		l, err := lk.Acquire(ctx, k, "a", ttl)
		if err != nil || l.Token != lock.MaxToken {
			t.Fatalf("last acquire = %+v, %v; want token lock.MaxToken", l, err)
		}
		if h, err := lk.Inspect(ctx, k); err != nil || h.Token != lock.MaxToken {
			t.Fatalf("Inspect = %+v, %v; want the exact lock.MaxToken", h, err)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatalf("release of token lock.MaxToken: %v", err)
		}
		if _, err := lk.Acquire(ctx, k, "a", ttl); !errors.Is(err, lock.ErrFenceExhausted) {
			t.Fatalf("acquire past lock.MaxToken = %v, want lock.ErrFenceExhausted", err)
		}
		if err := lk.AdvanceFence(ctx, k, 1); !errors.Is(err, lock.ErrFenceExhausted) {
			t.Fatalf("advance of an exhausted counter = %v, want lock.ErrFenceExhausted", err)
		}
	})

	run("bad arguments are configuration errors", func(t *testing.T) {
		_, err := lk.Acquire(ctx, "", "", 0)
		AssertProblems(t, err, "key", "owner", "ttl")
		_, err = lk.Acquire(ctx, key(t.Name()), "a", -time.Second)
		AssertProblems(t, err, "ttl")
		AssertProblems(t, lk.Renew(ctx, lock.Lease{Key: "k", Owner: "a", TTL: time.Second}), "lease.Token")
		AssertProblems(t, lk.Release(ctx, lock.Lease{Key: "k", Owner: "a", TTL: time.Second}), "lease.Token")
		AssertProblems(t, lk.Release(ctx, lock.Lease{Token: 1}), "key", "owner", "ttl")
		AssertProblems(t, lk.AdvanceFence(ctx, "", 1), "key")
		_, err = lk.Inspect(ctx, "")
		AssertProblems(t, err, "key")
		if ex, ok := lk.(lock.Expiring); ok {
			_, err = ex.AcquireExpiring(ctx, "", "", 0, 0)
			AssertProblems(t, err, "key", "owner", "ttl", "fenceTTL")
			_, err = ex.AcquireExpiring(ctx, key(t.Name()), "a", time.Second, -time.Second)
			AssertProblems(t, err, "fenceTTL")
		}
	})

	nf, ok := lk.(lock.Notifier)
	if !ok {
		return
	}
	run("a release is announced to the other owners watching the key", func(t *testing.T) {
		k := key(t.Name())
		self, stopSelf, err := nf.WatchReleases(ctx, k, "a")
		if err != nil {
			t.Fatal(err)
		}
		defer stopSelf()
		other, stopOther, err := nf.WatchReleases(ctx, k, "b")
		if err != nil {
			t.Fatal(err)
		}
		defer stopOther()
		// Repeat until a notice arrives: a watch on a network backend may take a
		// moment to be in place, and a notice sent before it is lost by design.
		deadline := time.Now().Add(5 * time.Second)
		for got := false; !got; {
			l, err := lk.Acquire(ctx, k, "a", ttl)
			if err != nil {
				t.Fatal(err)
			}
			if err := lk.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			select {
			case <-other:
				got = true
			case <-time.After(100 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatal("no release notice within 5s")
				}
			}
		}
		select {
		case <-self:
			t.Fatal("the releasing owner was told of its own release")
		case <-time.After(100 * time.Millisecond):
		}
		stopOther()
		stopOther() // idempotent
		_, _, err = nf.WatchReleases(ctx, "", "a")
		AssertProblems(t, err, "key")
	})
}

// AssertProblems checks err is a *fault.ConfigError naming exactly fields, in order.
func AssertProblems(t *testing.T, err error, fields ...string) {
	t.Helper()
	ce, ok := errors.AsType[*fault.ConfigError](err)
	if !ok {
		t.Fatalf("err = %v (%T), want *fault.ConfigError naming %v", err, err, fields)
	}
	var got []string
	for _, p := range ce.Problems {
		got = append(got, p.Field)
	}
	if len(got) != len(fields) {
		t.Fatalf("problems %v, want fields %v", ce.Problems, fields)
	}
	for i := range got {
		if got[i] != fields[i] {
			t.Fatalf("problems %v, want fields %v", ce.Problems, fields)
		}
	}
}
