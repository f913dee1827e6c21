package cronentry

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/rediskit"
)

// wipeLock is a lock whose backend can lose all its data, as a Redis restarted
// without persistence does.
type wipeLock struct {
	lock.Lock
	cur atomic.Pointer[lock.Memory]
}

func newWipeLock() *wipeLock {
	w := &wipeLock{}
	w.wipe()
	return w
}

func (w *wipeLock) wipe() { w.cur.Store(lock.NewMemory()); w.Lock = nil }

func (w *wipeLock) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (lock.Lease, error) {
	return w.cur.Load().Acquire(ctx, key, owner, ttl)
}
func (w *wipeLock) Renew(ctx context.Context, l lock.Lease) error { return w.cur.Load().Renew(ctx, l) }
func (w *wipeLock) Release(ctx context.Context, l lock.Lease) error {
	return w.cur.Load().Release(ctx, l)
}
func (w *wipeLock) AdvanceFence(ctx context.Context, key string, floor uint64) error {
	return w.cur.Load().AdvanceFence(ctx, key, floor)
}
func (w *wipeLock) Inspect(ctx context.Context, key string) (lock.Holder, error) {
	return w.cur.Load().Inspect(ctx, key)
}

// fleetReplica is one replica's scheduler of a "report" job, not served: the test
// drives its claims tick by tick.
func fleetReplica(t *testing.T, lk lock.Lock, owner string, claim func(context.Context, Tick) (bool, error)) (*Scheduler, *job) {
	t.Helper()
	f := OncePerFleet(lk, owner, time.Minute)
	f.Claim = claim
	s, err := New(Config{Name: "cron"}, []Job{{Name: "report", Every: time.Second, OncePerFleet: f,
		Run: func(context.Context, Tick) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	return s, s.jobs[0]
}

// ticks claims ticks t0, t0+1s, … on each replica in turn and returns the outcomes,
// replica by replica; between is called after the first replica's claim of tick i.
func claimAll(t *testing.T, reps []*Scheduler, jobs []*job, tick Tick, between func()) []outcome {
	t.Helper()
	var out []outcome
	for i, s := range reps {
		o, _, _ := s.claim(context.Background(), jobs[i], tick)
		out = append(out, o)
		if i == 0 && between != nil {
			between()
		}
	}
	return out
}

func TestOncePerFleetAcrossLockDataLoss(t *testing.T) {
	base := time.Now().Truncate(time.Second)
	tick := func(i int) Tick { return Tick{Scheduled: base.Add(time.Duration(i) * time.Second)} }

	t.Run("at most once: a replica that finds the lock's data lost skips the tick, and counts it", func(t *testing.T) {
		lk := newWipeLock()
		a, ja := fleetReplica(t, lk, "a", nil)
		b, jb := fleetReplica(t, lk, "b", nil)
		reps, jobs := []*Scheduler{a, b}, []*job{ja, jb}
		if got := claimAll(t, reps, jobs, tick(0), nil); got[0] != succeeded || got[1] != skippedOtherReplica {
			t.Fatalf("tick 0: %v, want ok then skipped_other_replica", got)
		}
		// The backend loses its data after a ran tick 1 and before b reaches it.
		got := claimAll(t, reps, jobs, tick(1), lk.wipe)
		if got[0] != succeeded || got[1] != skippedLockLost {
			t.Fatalf("tick 1 across the loss: %v, want ok then skipped_lock_lost (never ok twice)", got)
		}
		// A replica that had not seen the loss skips the next tick it wins too (its
		// lease could predate the loss as far as it can tell); then ticks run once
		// again, on whichever replica takes them.
		if got := claimAll(t, reps, jobs, tick(2), nil); got[0] == succeeded && got[1] == succeeded {
			t.Fatalf("tick 2 after the loss: %v, ran twice", got)
		}
		if got := claimAll(t, reps, jobs, tick(3), nil); got[0] == got[1] || (got[0] != succeeded && got[1] != succeeded) {
			t.Fatalf("tick 3 after the loss: %v, want exactly one ok", got)
		}
	})

	t.Run("exactly once with a store-side claim", func(t *testing.T) {
		lk := newWipeLock()
		claimed := map[time.Time]string{}
		claim := func(owner string) func(context.Context, Tick) (bool, error) {
			return func(_ context.Context, tk Tick) (bool, error) {
				if _, ok := claimed[tk.Scheduled]; ok {
					return false, nil
				}
				claimed[tk.Scheduled] = owner
				return true, nil
			}
		}
		a, ja := fleetReplica(t, lk, "a", claim("a"))
		b, jb := fleetReplica(t, lk, "b", claim("b"))
		got := claimAll(t, []*Scheduler{a, b}, []*job{ja, jb}, tick(0), lk.wipe)
		if got[0] != succeeded || got[1] != skippedClaimed {
			t.Fatalf("tick across the loss: %v, want ok then skipped_claimed", got)
		}
	})
}

func TestOncePerFleetAcrossRedisRestart(t *testing.T) {
	rds := env.Redis(t)
	client := redis.NewClient(&redis.Options{Addr: rds.Addr(), MaxRetries: 5})
	t.Cleanup(func() { client.Close() })
	lk, err := rediskit.NewLock(client, rediskit.LockConfig{KeyPrefix: "test:" + t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	a, ja := fleetReplica(t, lk, "a", nil)
	b, jb := fleetReplica(t, lk, "b", nil)
	base := time.Now().Truncate(time.Second)
	reps, jobs := []*Scheduler{a, b}, []*job{ja, jb}
	claimAll(t, reps, jobs, Tick{Scheduled: base}, nil)
	got := claimAll(t, reps, jobs, Tick{Scheduled: base.Add(time.Second)}, func() {
		if err := rds.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := rds.Restart(); err != nil { // empty: no persistence
			t.Fatal(err)
		}
	})
	if got[0] != succeeded || got[1] != skippedLockLost {
		t.Fatalf("tick across the Redis restart: %v, want ok then skipped_lock_lost", got)
	}
}
