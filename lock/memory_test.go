package lock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/lock/locktest"
)

func TestMemory(t *testing.T) {
	var lk lock.Memory // the zero value is ready
	locktest.Run(t, locktest.Harness{
		Lock:     &lk,
		Wrap:     synctest.Test,
		WaitPast: func(_ *testing.T, _ string, d time.Duration) { time.Sleep(d) },
	})
	t.Run("lease lapses exactly at its TTL", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lk := lock.NewMemory()
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
		lk := lock.NewMemory()
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

func TestMemoryDuplicateOwner(t *testing.T) {
	lk := lock.NewMemory()
	ctx := context.Background()
	old, _ := lk.Acquire(ctx, "k", "a", time.Minute)
	_ = lk.Release(ctx, old)
	if _, err := lk.Acquire(ctx, "k", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, op := range []func(context.Context, lock.Lease) error{lk.Renew, lk.Release} {
		if err := op(ctx, old); !errors.Is(err, lock.ErrNotHeld) || !errors.Is(err, lock.ErrDuplicateOwner) {
			t.Fatalf("= %v; want ErrNotHeld and ErrDuplicateOwner", err)
		}
	}
}
