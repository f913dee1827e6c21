package etcdkit

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/lock/locktest"
)

// newClient returns a client of endpoints, closed when t ends.
func newClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newLock(t testing.TB, c *clientv3.Client) *Lock {
	t.Helper()
	lk, err := NewLock(c, LockConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

func unique(t testing.TB) string {
	return strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// waitFree polls Inspect until key is free: leases lapse on etcd's timer.
func waitFree(t *testing.T, lk lock.Lock, key string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		h, err := lk.Inspect(context.Background(), key)
		if err == nil && !h.Held() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q still held after %v: %+v, %v", key, within, h, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLock(t *testing.T) {
	c := newClient(t, etcd(t).Endpoints())
	lk := newLock(t, c)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	locktest.Run(t, locktest.Harness{
		Lock:     lk,
		Key:      func(n string) string { return n + "-" + run },
		WaitPast: func(t *testing.T, k string, d time.Duration) { waitFree(t, lk, k, d+10*time.Second) },
	})

	t.Run("the holder key carries the lease, the counter none", func(t *testing.T) {
		ctx := context.Background()
		k := unique(t)
		l, err := lk.Acquire(ctx, k, "a", 1500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Txn(ctx).Then(clientv3.OpGet(defaultKeyPrefix+k+"/holder"), clientv3.OpGet(defaultKeyPrefix+k+"/fence")).Commit()
		if err != nil {
			t.Fatal(err)
		}
		holder, fence := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
		if len(holder) != 1 || string(holder[0].Value) != "a:1" || holder[0].Lease == 0 {
			t.Fatalf("holder %v, want a:1 under a lease", holder)
		}
		if len(fence) != 1 || string(fence[0].Value) != "1" || fence[0].Lease != 0 {
			t.Fatalf("fence %v, want 1 under no lease", fence)
		}
		ttl, err := c.TimeToLive(ctx, clientv3.LeaseID(holder[0].Lease))
		if err != nil || ttl.GrantedTTL != 2 {
			t.Fatalf("granted TTL %+v, %v; want 1.5s rounded up to 2s", ttl, err)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("bad configuration is one error naming each field", func(t *testing.T) {
		_, err := NewLock(nil, LockConfig{})
		locktest.AssertProblems(t, err, "client")
	})
}

// TestRace has candidates on separate clients race for one free lock, many times
// (locktest.Race).
func TestRace(t *testing.T) {
	e := etcd(t)
	const n = 4
	var locks []lock.Lock
	for range n {
		locks = append(locks, newLock(t, newClient(t, e.Endpoints())))
	}
	locktest.Race(t, locks, unique(t), 10)
}

// TestStaleHolder lets a holder's lease lapse while another takes the lock: the old
// holder's renewal and release are refused, and a store fenced with the tokens
// accepts no write of the old term after the new one began.
func TestStaleHolder(t *testing.T) {
	e := etcd(t)
	a, b := newLock(t, newClient(t, e.Endpoints())), newLock(t, newClient(t, e.Endpoints()))
	ctx := context.Background()
	k := unique(t)
	old, err := a.Acquire(ctx, k, "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitFree(t, b, k, 10*time.Second)
	nl, err := b.Acquire(ctx, k, "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Renew(ctx, old); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("stale Renew = %v, want lock.ErrNotHeld", err)
	}
	if err := a.Release(ctx, old); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("stale Release = %v, want lock.ErrNotHeld", err)
	}
	if h, err := b.Inspect(ctx, k); err != nil || h.Owner != "b" || h.Token != nl.Token {
		t.Fatalf("Inspect = %+v, %v; the stale holder disturbed its successor", h, err)
	}
	// A fenced store: refuses a token below the highest it has seen.
	var highest uint64
	write := func(tok uint64) bool {
		if tok < highest {
			return false
		}
		highest = tok
		return true
	}
	if !write(nl.Token) {
		t.Fatal("the current holder's write was refused")
	}
	if write(old.Token) {
		t.Fatalf("a write with the stale token %d was accepted after %d", old.Token, nl.Token)
	}
}

// TestLapsedForgotten takes many keys once each and lets them lapse, as a cron
// job's ticks do: the Lock forgets them, rather than keeping a record per key
// forever.
func TestLapsedForgotten(t *testing.T) {
	lk := newLock(t, newClient(t, etcd(t).Endpoints()))
	ctx := context.Background()
	base := unique(t)
	for i := range 20 {
		if _, err := lk.Acquire(ctx, base+strconv.Itoa(i), "a", time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := lk.Acquire(ctx, base+strconv.Itoa(i), "b", time.Second); !errors.Is(err, lock.ErrHeld) {
			t.Fatalf("second acquire = %v, want lock.ErrHeld", err)
		}
	}
	waitFree(t, lk, base+"19", 10*time.Second)
	time.Sleep(time.Second) // the pruning's slack, past the lapse
	if _, err := lk.Acquire(ctx, base+"last", "a", time.Second); err != nil {
		t.Fatal(err)
	}
	lk.mu.Lock()
	held, spare, fence := len(lk.held), len(lk.spare), len(lk.fence)
	lk.mu.Unlock()
	if held != 1 || spare != 0 || fence != 1 {
		t.Fatalf("records left: %d held, %d spare, %d counters; want only the last key's", held, spare, fence)
	}
}

// TestUnreachable: a lock on endpoints where no etcd answers returns, within its
// ctx, an error naming the endpoints — never a hang.
func TestUnreachable(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	lk := newLock(t, newClient(t, []string{"http://127.0.0.1:" + strconv.Itoa(port)}))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = lk.Inspect(ctx, "k")
	if err == nil || !strings.Contains(err.Error(), "etcd unreachable at 127.0.0.1:"+strconv.Itoa(port)) {
		t.Fatalf("Inspect = %v, want an error naming the unreachable endpoint", err)
	}
}
