package cronentry

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/rediskit"
)

// TestOncePerFleetRedis runs three replicas against a real Redis, in real time, and
// replaces one of them midway: every tick in between runs exactly once.
func TestOncePerFleetRedis(t *testing.T) {
	rds := env.Redis(t)
	prefix := fmt.Sprintf("test:%s:", t.Name())
	oncePerFleetRolling(t, func(string) lock.Lock {
		client := redis.NewClient(&redis.Options{Addr: rds.Addr()})
		t.Cleanup(func() { client.Close() })
		lk, err := rediskit.NewLock(client, rediskit.LockConfig{KeyPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		return lk
	})
}

// oncePerFleetRolling runs three replicas, each with the lock open returns, and
// replaces one of them midway: every tick in between must run exactly once.
func oncePerFleetRolling(t *testing.T, open func(owner string) lock.Lock) {
	const (
		every   = 200 * time.Millisecond
		jitter  = 50 * time.Millisecond
		ttl     = 2 * time.Second
		failure = 20 * time.Second // a bound for failing waits, never a synchronisation
	)
	var (
		mu      sync.Mutex
		runs    = map[time.Time][]string{}
		stopped = map[string]time.Time{} // owner → when its Stop returned
		newTick = make(chan struct{}, 1000)
	)
	replica := func(owner string) *serving {
		lk := open(owner)
		return start(t, []Job{{
			Name: "report", Every: every, Jitter: jitter,
			OncePerFleet: OncePerFleet(lk, owner, ttl),
			Run: func(_ context.Context, tk Tick) error {
				mu.Lock()
				defer mu.Unlock()
				k := tk.Scheduled.UTC()
				if len(runs[k]) == 0 {
					newTick <- struct{}{}
				}
				runs[k] = append(runs[k], owner)
				return nil
			},
		}}, nil)
	}
	waitTicks := func(n int) {
		t.Helper()
		deadline := time.After(failure)
		for range n {
			select {
			case <-newTick:
			case <-deadline:
				t.Fatalf("fewer than %d new ticks ran within %v", n, failure)
			}
		}
	}
	shutdown := func(owner string, x *serving) {
		x.closeStop()
		ctx, cancel := context.WithTimeout(context.Background(), failure)
		defer cancel()
		if err := x.s.Drain(ctx); err != nil {
			t.Errorf("%s: Drain = %v", owner, err)
		}
		if err := x.s.Stop(ctx); err != nil {
			t.Errorf("%s: Stop = %v", owner, err)
		}
		mu.Lock()
		stopped[owner] = time.Now()
		mu.Unlock()
	}

	replicas := map[string]*serving{"a": replica("a"), "b": replica("b"), "c": replica("c")}
	waitTicks(10)
	shutdown("b", replicas["b"]) // a rolling restart: b goes, d comes
	delete(replicas, "b")
	replicas["d"] = replica("d")
	waitTicks(12)
	for _, owner := range []string{"a", "c", "d"} {
		shutdown(owner, replicas[owner])
	}

	mu.Lock()
	defer mu.Unlock()
	ticks := make([]time.Time, 0, len(runs))
	for tk := range runs {
		ticks = append(ticks, tk)
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Before(ticks[j]) })
	if len(ticks) < 22 {
		t.Fatalf("%d ticks ran, want at least 22", len(ticks))
	}
	// Every tick from the first to the last ran, and ran exactly once.
	for tk := ticks[0]; !tk.After(ticks[len(ticks)-1]); tk = tk.Add(every) {
		switch owners := runs[tk]; {
		case len(owners) == 0:
			t.Errorf("tick %v ran nowhere", tk.Format("15:04:05.000"))
		case len(owners) > 1:
			t.Errorf("tick %v ran on %v, want exactly one replica", tk.Format("15:04:05.000"), owners)
		}
	}
	for tk, owners := range runs {
		if owners[0] == "b" && tk.After(stopped["b"]) {
			t.Errorf("b ran tick %v after its Stop returned", tk)
		}
	}
	t.Logf("%d ticks from %v to %v; runs by replica: %v", len(ticks),
		ticks[0].Format("15:04:05.000"), ticks[len(ticks)-1].Format("15:04:05.000"), byOwner(runs))
}

func byOwner(runs map[time.Time][]string) map[string]int {
	out := map[string]int{}
	for _, owners := range runs {
		for _, o := range owners {
			out[o]++
		}
	}
	return out
}

// TestOncePerFleetKeysExpire runs a once-per-fleet job for many ticks against a real
// Redis through a rediskit.Lock left at its defaults (FenceTTL 0): the keys Redis
// holds stay a handful — each tick's lease and fencing counter expire on their own —
// instead of growing by one counter per tick.
func TestOncePerFleetKeysExpire(t *testing.T) {
	rds := env.Redis(t)
	const (
		every   = 20 * time.Millisecond
		ttl     = 100 * time.Millisecond
		ticks   = 100
		failure = 60 * time.Second // a bound for a failing wait, never a synchronisation
	)
	prefix := fmt.Sprintf("test:%s:", t.Name())
	client := redis.NewClient(&redis.Options{Addr: rds.Addr()})
	t.Cleanup(func() { client.Close() })
	lk, err := rediskit.NewLock(client, rediskit.LockConfig{KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, ticks*2)
	x := start(t, []Job{{Name: "sweep", Every: every, OncePerFleet: OncePerFleet(lk, "a", ttl),
		Run: func(context.Context, Tick) error { ran <- struct{}{}; return nil }}}, nil)
	deadline := time.After(failure)
	for range ticks {
		select {
		case <-ran:
		case <-deadline:
			t.Fatalf("fewer than %d ticks ran within %v", ticks, failure)
		}
	}
	x.shutdown()
	keys, err := client.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// Alive at most: the counters of the ticks claimed in the last 2 TTLs (10 at
	// most, 200ms / 20ms), their leases, and the job's epoch counter, which must
	// never expire. Without expiry there would be one counter per tick: 100 or more.
	if len(keys) > 40 { // 2 x 10 + 1, with room for ticks bunched by a loaded machine
		t.Errorf("Redis holds %d keys after %d ticks, want a handful: %v", len(keys), ticks, keys)
	}
	const noExpiry = -1 * time.Nanosecond // go-redis's PTTL for a key without one
	epoch := 0
	for _, k := range keys {
		if strings.Contains(k, ":epoch}") {
			epoch++
			if d := client.PTTL(context.Background(), k).Val(); d != noExpiry {
				t.Errorf("the epoch counter %s expires (PTTL %v): it must outlive the ticks", k, d)
			}
			continue
		}
		if d := client.PTTL(context.Background(), k).Val(); d == noExpiry {
			t.Errorf("key %s has no expiry", k)
		}
	}
	if epoch != 1 {
		t.Errorf("%d epoch counters, want the job's one", epoch)
	}
	t.Logf("%d keys in Redis after %d ticks", len(keys), ticks)
}
