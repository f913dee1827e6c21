package rediskit

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/lock/locktest"
)

// newClient returns a client of the package's Redis with short timeouts and no
// retries, so that a dead server is seen at once; it is closed when t ends.
func newClient(t testing.TB, r *testenv.Redis) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:         r.Addr(),
		DialTimeout:  250 * time.Millisecond,
		ReadTimeout:  250 * time.Millisecond,
		WriteTimeout: 250 * time.Millisecond,
		MaxRetries:   -1,
		// One dial attempt: a dead server is reported at once, not after 5 × 100ms.
		DialerRetries: 1,
		Protocol:      2,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// keyFor names a lock after the test, unique to this run, so that -count=N runs
// against the same Redis do not see each other's leases and counters.
func keyFor(t testing.TB, suffix string) string {
	return strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()) + suffix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

func newLock(t testing.TB, c redis.UniversalClient, cfg LockConfig) *Lock {
	t.Helper()
	lk, err := NewLock(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

// TestRace has candidates on separate clients race for one free lock, many times
// (locktest.Race).
func TestRace(t *testing.T) {
	r := env.Redis(t)
	var locks []lock.Lock
	for range 4 {
		locks = append(locks, newLock(t, newClient(t, r), LockConfig{}))
	}
	locktest.Race(t, locks, strings.NewReplacer("/", ".").Replace(t.Name())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36), 10)
}

func TestLock(t *testing.T) {
	r := env.Redis(t)
	c := newClient(t, r)
	lk := newLock(t, c, LockConfig{})
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	locktest.Run(t, locktest.Harness{
		Lock: lk,
		Key:  func(n string) string { return strings.NewReplacer("/", ".", " ", "_").Replace(n) + "-" + run },
		WaitPast: func(t *testing.T, k string, d time.Duration) {
			deadline := time.Now().Add(5 * time.Second)
			for {
				h, err := lk.Inspect(context.Background(), k)
				if err == nil && !h.Held() {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("lease of %v still held after 5s: %+v, %v", d, h, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		},
	})

	t.Run("one hash tag per lock; the counter never expires", func(t *testing.T) {
		ctx := context.Background()
		k := keyFor(t, "")
		l, err := lk.Acquire(ctx, k, "a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		lease, fence := "servicewright:lock:{"+k+"}", "servicewright:lock:{"+k+"}:fence"
		if v := c.Get(ctx, lease).Val(); v != "a:1" {
			t.Fatalf("lease value %q, want a:1", v)
		}
		if ttl := c.PTTL(ctx, lease).Val(); ttl <= 0 || ttl > time.Minute {
			t.Fatalf("lease PTTL %v", ttl)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		if n := c.Exists(ctx, lease).Val(); n != 0 {
			t.Fatal("lease key left after release")
		}
		if ttl := c.TTL(ctx, fence).Val(); ttl != -1 {
			t.Fatalf("fence key TTL %v, want none (-1)", ttl)
		}
		if slot(lease) != slot(fence) {
			t.Fatalf("lease and fence keys hash to different slots")
		}
	})

	t.Run("bad configuration is one error naming each field", func(t *testing.T) {
		_, err := NewLock(nil, LockConfig{KeyPrefix: "x{y}:", FenceTTL: -1})
		locktest.AssertProblems(t, err, "client", "KeyPrefix", "FenceTTL")
	})
}

// slot returns the part of a key Redis Cluster hashes: the hash tag when there is one.
func slot(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

func TestRedisFenceTTL(t *testing.T) {
	c := newClient(t, env.Redis(t))
	ctx := context.Background()
	t.Run("counters of a lock made WithFenceTTL expire", func(t *testing.T) {
		lk := newLock(t, c, LockConfig{KeyPrefix: "fttl:", FenceTTL: time.Minute})
		if _, err := lk.Acquire(ctx, "tick-1", "a", time.Second); err != nil {
			t.Fatal(err)
		}
		ttl, err := c.PTTL(ctx, "fttl:{tick-1}:fence").Result()
		if err != nil || ttl <= 0 || ttl > time.Minute {
			t.Errorf("fence counter PTTL = %v, %v; want within (0, 1m]", ttl, err)
		}
	})
	t.Run("by default counters never expire", func(t *testing.T) {
		lk := newLock(t, c, LockConfig{KeyPrefix: "fttl0:"})
		if _, err := lk.Acquire(ctx, "lease", "a", time.Second); err != nil {
			t.Fatal(err)
		}
		if ttl, err := c.PTTL(ctx, "fttl0:{lease}:fence").Result(); err != nil || ttl != -1 {
			t.Errorf("fence counter PTTL = %v, %v; want -1 (no expiry)", ttl, err)
		}
	})
	t.Run("AcquireExpiring sets the key's counter to expire whatever the lock's FenceTTL", func(t *testing.T) {
		lk := newLock(t, c, LockConfig{KeyPrefix: "fttlx:"})
		lease, err := lk.AcquireExpiring(ctx, "tick-1", "a", time.Second, 2*time.Second)
		if err != nil || lease.Token != 1 {
			t.Fatalf("AcquireExpiring = %+v, %v", lease, err)
		}
		if ttl, err := c.PTTL(ctx, "fttlx:{tick-1}:fence").Result(); err != nil || ttl <= time.Second || ttl > 2*time.Second {
			t.Errorf("fence counter PTTL = %v, %v; want within (1s, 2s]", ttl, err)
		}
		_, err = lk.AcquireExpiring(ctx, "tick-2", "a", time.Second, 0)
		locktest.AssertProblems(t, err, "fenceTTL")
	})
}
