package rediskit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/servicewright/servicewright/lock"
)

func TestDuplicateOwner(t *testing.T) {
	lk := newLock(t, newClient(t, env.Redis(t)), LockConfig{})
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		owner    string
		dup      bool
		op       func(lock.Lease) error
		opName   string
		otherOwn string
	}{
		{"a renewal that finds its owner id with another token names a duplicate", "a:1", true, func(l lock.Lease) error { return lk.Renew(ctx, l) }, "renew", "a:1"},
		{"a release that finds its owner id with another token names a duplicate", "a", true, func(l lock.Lease) error { return lk.Release(ctx, l) }, "release", "a"},
		{"another owner whose id starts like ours is no duplicate", "a", false, func(l lock.Lease) error { return lk.Renew(ctx, l) }, "renew", "a:2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := keyFor(t, "")
			old, err := lk.Acquire(ctx, k, c.owner, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := lk.Release(ctx, old); err != nil {
				t.Fatal(err)
			}
			if _, err := lk.Acquire(ctx, k, c.otherOwn, time.Minute); err != nil {
				t.Fatal(err)
			}
			err = c.op(old)
			if !errors.Is(err, lock.ErrNotHeld) || errors.Is(err, lock.ErrDuplicateOwner) != c.dup {
				t.Fatalf("%s of the old lease = %v; want ErrNotHeld, duplicate %v", c.opName, err, c.dup)
			}
			h, _ := lk.Inspect(ctx, k)
			if !h.Held() || h.Owner != c.otherOwn {
				t.Fatalf("the other holder's lease was changed: %+v", h)
			}
		})
	}
}
