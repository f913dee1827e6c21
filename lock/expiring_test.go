package lock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// TestMemoryExpiring takes a key per tick for many ticks in virtual time, as a
// once-per-fleet cron job does: the Memory holds only the keys of the ticks whose
// fenceTTL has not passed, instead of one counter per tick.
func TestMemoryExpiring(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m Memory
		ctx := context.Background()
		const (
			every    = time.Second
			ttl      = 2 * time.Second
			fenceTTL = 4 * time.Second
			ticks    = 1000
		)
		for i := range ticks {
			l, err := m.AcquireExpiring(ctx, fmt.Sprintf("cron:job:%d", i), "a", ttl, fenceTTL)
			if err != nil || l.Token != 1 {
				t.Fatalf("tick %d: %+v, %v", i, l, err)
			}
			time.Sleep(every)
		}
		if _, err := m.Inspect(ctx, "other"); err != nil { // any call sweeps
			t.Fatal(err)
		}
		m.mu.Lock()
		fences, leases, expiry := len(m.fences), len(m.leases), len(m.expiry)
		m.mu.Unlock()
		// Alive: the ticks taken within the last fenceTTL (4 s / 1 s).
		if fences > 4 || leases > 4 || expiry > 4 {
			t.Fatalf("after %d ticks the Memory keeps %d counters, %d leases, %d expiries; want at most 4 each", ticks, fences, leases, expiry)
		}
	})
}

// TestMemoryExpiringFence: while a key's record lives its tokens strictly increase;
// once its fenceTTL has passed (and its lease lapsed) it starts again from 1; a live
// lease keeps it however late; a plain Acquire makes it permanent.
func TestMemoryExpiringFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m Memory
		ctx := context.Background()
		take := func(key string, fenceTTL time.Duration, want uint64) Lease {
			t.Helper()
			var (
				l   Lease
				err error
			)
			if fenceTTL > 0 {
				l, err = m.AcquireExpiring(ctx, key, "a", time.Second, fenceTTL)
			} else {
				l, err = m.Acquire(ctx, key, "a", time.Second)
			}
			if err != nil || l.Token != want {
				t.Fatalf("acquire %q: token %d, %v; want %d", key, l.Token, err, want)
			}
			return l
		}
		l := take("k", 3*time.Second, 1)
		if err := m.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3*time.Second - 1)
		l = take("k", 3*time.Second, 2) // live: counts on, and the expiry moves
		if err := m.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		if h, _ := m.Inspect(ctx, "k"); h.Fence != 0 {
			t.Fatalf("fence %d after fenceTTL, want the record gone", h.Fence)
		}
		take("k", 3*time.Second, 1)

		// A lease that outlives fenceTTL keeps its record.
		take("long", time.Millisecond, 1)
		time.Sleep(500 * time.Millisecond)
		if h, _ := m.Inspect(ctx, "long"); h.Fence != 1 || !h.Held() {
			t.Fatalf("live lease past fenceTTL: %+v, want held with fence 1", h)
		}

		// A plain Acquire makes the record permanent.
		time.Sleep(time.Second)
		l = take("p", time.Second, 1)
		if err := m.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		l = take("p", 0, 2)
		if err := m.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		take("p", 0, 3)
	})
}

func TestMemoryExpiringBadInput(t *testing.T) {
	var m Memory
	_, err := m.AcquireExpiring(context.Background(), "", "", 0, 0)
	var ce *fault.ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 4 {
		t.Fatalf("got %v, want one ConfigError naming key, owner, ttl and fenceTTL", err)
	}
	for i, f := range []string{"key", "owner", "ttl", "fenceTTL"} {
		if ce.Problems[i].Field != f {
			t.Errorf("problem %d names %q, want %q", i, ce.Problems[i].Field, f)
		}
	}
}
