package leader

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// lockSuite checks the Lock contract. Each subtest runs inside wrap (a synctest
// bubble for MemoryLock); waitPast(d) returns once a lease of ttl d has lapsed on the
// backend; key gives each subtest a fresh lock name.
func lockSuite(t *testing.T, lk Lock, wrap func(*testing.T, func(*testing.T)), key func(string) string, waitPast func(t *testing.T, key string, d time.Duration)) {
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
			if _, err := lk.Acquire(ctx, k, owner, ttl); !errors.Is(err, ErrHeld) {
				t.Fatalf("second acquire by %q: err = %v, want ErrHeld", owner, err)
			}
		}
	})

	run("renew and release only with the same owner and token", func(t *testing.T) {
		k := key(t.Name())
		l, err := lk.Acquire(ctx, k, "a:1", ttl) // an owner with a colon
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []Lease{{k, "a:1", l.Token + 1, ttl}, {k, "b", l.Token, ttl}, {k, "a", l.Token, ttl}} {
			if err := lk.Renew(ctx, bad); !errors.Is(err, ErrNotHeld) {
				t.Errorf("Renew(%+v) = %v, want ErrNotHeld", bad, err)
			}
			if err := lk.Release(ctx, bad); !errors.Is(err, ErrNotHeld) {
				t.Errorf("Release(%+v) = %v, want ErrNotHeld", bad, err)
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
		if err := lk.Release(ctx, l); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("second Release = %v, want ErrNotHeld", err)
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
		if err := lk.Renew(ctx, old); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("renew of the lapsed lease = %v, want ErrNotHeld", err)
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
		if err := lk.AdvanceFence(ctx, k, MaxToken); !errors.Is(err, ErrFenceOutOfRange) {
			t.Fatalf("advance to MaxToken = %v, want ErrFenceOutOfRange", err)
		}
		if err := lk.AdvanceFence(ctx, k, MaxToken-1); err != nil {
			t.Fatal(err)
		}
		l, err := lk.Acquire(ctx, k, "a", ttl)
		if err != nil || l.Token != MaxToken {
			t.Fatalf("last acquire = %+v, %v; want token MaxToken", l, err)
		}
		if h, err := lk.Inspect(ctx, k); err != nil || h.Token != MaxToken {
			t.Fatalf("Inspect = %+v, %v; want the exact MaxToken", h, err)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatalf("release of token MaxToken: %v", err)
		}
		if _, err := lk.Acquire(ctx, k, "a", ttl); !errors.Is(err, ErrFenceExhausted) {
			t.Fatalf("acquire past MaxToken = %v, want ErrFenceExhausted", err)
		}
		if err := lk.AdvanceFence(ctx, k, 1); !errors.Is(err, ErrFenceExhausted) {
			t.Fatalf("advance of an exhausted counter = %v, want ErrFenceExhausted", err)
		}
	})

	run("bad arguments are configuration errors", func(t *testing.T) {
		_, err := lk.Acquire(ctx, "", "", 0)
		assertProblems(t, err, "key", "owner", "ttl")
		_, err = lk.Acquire(ctx, key(t.Name()), "a", -time.Second)
		assertProblems(t, err, "ttl")
		assertProblems(t, lk.Renew(ctx, Lease{Key: "k", Owner: "a", TTL: time.Second}), "lease.Token")
		assertProblems(t, lk.AdvanceFence(ctx, "", 1), "key")
		_, err = lk.Inspect(ctx, "")
		assertProblems(t, err, "key")
	})
}

// assertProblems checks err is a *fault.ConfigError naming exactly fields, in order.
func assertProblems(t *testing.T, err error, fields ...string) {
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

func TestMemoryLock(t *testing.T) {
	var lk MemoryLock // the zero value is ready
	lockSuite(t, &lk, synctest.Test, func(n string) string { return n }, func(_ *testing.T, _ string, d time.Duration) { time.Sleep(d) })
	t.Run("lease lapses exactly at its TTL", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lk := NewMemoryLock()
			ctx := context.Background()
			l, _ := lk.Acquire(ctx, "k", "a", time.Second)
			time.Sleep(time.Second - 1)
			if err := lk.Renew(ctx, l); err != nil {
				t.Fatalf("renew 1ns before expiry: %v", err)
			}
			time.Sleep(time.Second)
			if h, _ := lk.Inspect(ctx, "k"); h.Held() {
				t.Fatalf("held %v after its renewed TTL", h)
			}
		})
	})
	t.Run("a done ctx changes nothing", func(t *testing.T) {
		lk := NewMemoryLock()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := lk.Acquire(ctx, "k", "a", time.Second); !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire = %v", err)
		}
		if h, _ := lk.Inspect(context.Background(), "k"); h.Held() || h.Fence != 0 {
			t.Fatalf("state changed: %+v", h)
		}
	})
}
