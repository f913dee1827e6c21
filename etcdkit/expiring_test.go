package etcdkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/servicewright/servicewright/lock"
)

// TestAcquireExpiring takes a key per tick for many ticks, as a once-per-fleet cron
// job does, against a real 3-member etcd: etcd deletes the ticks' counters when their
// fenceTTL lapses, instead of keeping one counter key per tick; a key taken with
// Acquire keeps its counter; while a counter lives its tokens increase, and a key
// whose counter expired counts from 1 again.
func TestAcquireExpiring(t *testing.T) {
	c := newClient(t, etcd(t).Endpoints())
	prefix := "test/" + unique(t) + "/"
	lk, err := NewLock(c, LockConfig{KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys := func(under string) int {
		t.Helper()
		resp, err := c.Get(ctx, prefix+under, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return int(resp.Count)
	}
	// waitGone polls etcd until no key of the ticks is left: etcd revokes leases
	// on its own timer, outside the test's control.
	waitGone := func() {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second) // a bound for a failing wait
		for keys("cron:") > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d keys of the ticks left after 60s", keys("cron:"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	take := func(key string, fenceTTL time.Duration, want uint64) {
		t.Helper()
		acquire := func() (lock.Lease, error) { return lk.Acquire(ctx, key, "a", 2*time.Second) }
		if fenceTTL > 0 {
			acquire = func() (lock.Lease, error) { return lk.AcquireExpiring(ctx, key, "a", 2*time.Second, fenceTTL) }
		}
		l, err := acquire()
		if err != nil || l.Token != want {
			t.Fatalf("acquire %q: token %d, %v; want %d", key, l.Token, err, want)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	take("permanent", 0, 1)
	take("again", time.Minute, 1)
	take("again", time.Minute, 2) // live: counts on
	const ticks = 100
	for i := range ticks {
		take(fmt.Sprintf("cron:job:%d", i), time.Second, 1)
	}
	if n := keys("cron:"); n == 0 {
		t.Fatal("no key of the ticks right after them: the counters are not written")
	}
	waitGone()
	if n := keys(""); n != 2 {
		t.Errorf("%d keys left, want the counters of permanent and again", n)
	}
	take("permanent", 0, 2)  // kept its counter
	take("again", 0, 3)      // kept its counter, and is now permanent
	take("cron:job:0", 0, 1) // its counter expired: counts from 1 again
}
