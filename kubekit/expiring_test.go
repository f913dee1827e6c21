package kubekit

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/servicewright/servicewright/lock"
)

// TestAcquireExpiring takes a key per tick for many ticks, as a once-per-fleet cron
// job does (never releasing them), against a real kube-apiserver: once their
// fenceTTL has passed, a later AcquireExpiring deletes the ticks' Leases, instead of
// the namespace keeping one Lease per tick, and the Lock forgets them too; a key
// taken with Acquire keeps its Lease; while a Lease lives its tokens increase, and a
// key whose Lease was deleted counts from 1 again.
func TestAcquireExpiring(t *testing.T) {
	admin := clientFor(t, "admin", "system:masters")
	ctx := context.Background()
	ns := "expiring-" + strconvNano()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, namespace(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lk := newLock(t, admin, ns)
	leases := func() int {
		t.Helper()
		list, err := admin.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	take := func(key string, fenceTTL time.Duration, want uint64) lock.Lease {
		t.Helper()
		acquire := func() (lock.Lease, error) { return lk.Acquire(ctx, key, "a", time.Minute) }
		if fenceTTL > 0 {
			acquire = func() (lock.Lease, error) { return lk.AcquireExpiring(ctx, key, "a", 50*time.Millisecond, fenceTTL) }
		}
		l, err := acquire()
		if err != nil || l.Token != want {
			t.Fatalf("acquire %q: token %d, %v; want %d", key, l.Token, err, want)
		}
		return l
	}
	release := func(l lock.Lease) {
		t.Helper()
		if err := lk.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	release(take("permanent", 0, 1))
	release(take("again", time.Hour, 1))
	release(take("again", time.Hour, 2)) // live: counts on

	const (
		ticks    = 100
		fenceTTL = 100 * time.Millisecond
	)
	var last time.Time
	for i := range ticks {
		take(fmt.Sprintf("cron-job-%d", i), fenceTTL, 1) // never released, as a tick's
		last = time.Now()
	}
	// Wait out the last tick's fenceTTL on this clock (the one the sweep judges by)
	// by polling, then take one more key: its sweep deletes every past tick's Lease.
	for time.Since(last) <= fenceTTL {
		time.Sleep(10 * time.Millisecond)
	}
	take("cron-job-last", fenceTTL, 1)
	// Left: permanent, again and the last tick's. Without expiry: 103.
	if n := leases(); n != 3 {
		t.Errorf("%d Leases in the namespace after %d ticks, want 3", n, ticks)
	}
	lk.mu.Lock()
	held, seen := len(lk.held), len(lk.seen)
	lk.mu.Unlock()
	if held > 2 || seen > 3 {
		t.Errorf("the Lock remembers %d holdings and %d versions after %d ticks, want a handful", held, seen, ticks)
	}
	release(take("permanent", 0, 2)) // kept its counter
	release(take("again", 0, 3))     // kept its counter, and is now permanent
	take("cron-job-0", fenceTTL, 1)  // its Lease was deleted: counts from 1 again
}
