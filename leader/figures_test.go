package leader

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servicewright/servicewright/lock"
)

// countLock counts the calls one process makes to its lock (each is one backend
// command: a Redis script, a PostgreSQL statement), and can be cut off from it, as a
// process that died would be.
type countLock struct {
	lock.Lock
	calls atomic.Int64
	dead  atomic.Bool
	close func() // ends the process's connections (PostgreSQL), or nil
}

func (c *countLock) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (lock.Lease, error) {
	if c.dead.Load() {
		return lock.Lease{}, errCut
	}
	c.calls.Add(1)
	return c.Lock.Acquire(ctx, key, owner, ttl)
}

func (c *countLock) Renew(ctx context.Context, l lock.Lease) error {
	if c.dead.Load() {
		return errCut
	}
	c.calls.Add(1)
	return c.Lock.Renew(ctx, l)
}

func (c *countLock) Release(ctx context.Context, l lock.Lease) error {
	if c.dead.Load() {
		return errCut
	}
	c.calls.Add(1)
	return c.Lock.Release(ctx, l)
}

func (c *countLock) Inspect(ctx context.Context, key string) (lock.Holder, error) {
	if c.dead.Load() {
		return lock.Holder{}, errCut
	}
	c.calls.Add(1)
	return c.Lock.Inspect(ctx, key)
}

func (c *countLock) WatchReleases(ctx context.Context, key, self string) (<-chan struct{}, func(), error) {
	return c.Lock.(lock.Notifier).WatchReleases(ctx, key, self)
}

func (c *countLock) EarliestRelease(ttl time.Duration) time.Duration {
	return lock.EarliestRelease(c.Lock, ttl)
}

// countWaiter is a countLock of a lock.Waiter; each wait is one command.
type countWaiter struct{ *countLock }

func (c countWaiter) AcquireWait(ctx context.Context, key, owner string, ttl, wait time.Duration) (lock.Lease, error) {
	if c.dead.Load() {
		return lock.Lease{}, errCut
	}
	c.calls.Add(1)
	return c.Lock.(lock.Waiter).AcquireWait(ctx, key, owner, ttl, wait)
}

// as returns c as the lock a replica uses: a lock.Waiter when the lock it counts is.
func (c *countLock) as() lock.Lock {
	if _, ok := c.Lock.(lock.Waiter); ok {
		return countWaiter{c}
	}
	return c
}

// fleetFigure measures one fleet of n campaigners at the default timings, spread
// over min(n, 10) processes (each with its own lock client and connections): the
// backend commands per second per campaigner while one leads, the graceful failover
// (the leader drains: the time from the end of its release to the next term), and
// the crash failover (the leader's process dies: its connections close, or, on
// Redis, nothing more reaches the backend from it).
//
// afterLapse is the crash failover less the time the crashed leader's lease still
// had to live (Redis; 0 on PostgreSQL, which frees it at once): how long after the
// lease became free someone campaigned, which is what spread campaigns shorten.
func fleetFigure(t *testing.T, b backend, poll bool, n int) (cmds float64, graceful, crash, afterLapse time.Duration) {
	key := keyFor(t, "")
	procs := min(n, 10)
	var locks []*countLock
	for range procs {
		lk := b.lock(t)
		c := &countLock{Lock: lk}
		if cl, ok := lk.(interface{ Close(context.Context) error }); ok {
			c.close = func() { _ = cl.Close(context.Background()) }
		}
		locks = append(locks, c)
	}
	rs := make([]*replica, n)
	proc := make([]int, n)
	for i := range n {
		proc[i] = i % procs
		c := Config{Lock: locks[proc[i]].as(), Key: key, Owner: fmt.Sprintf("c%d", i), Poll: poll}
		rs[i] = startReplica(t, c, (&termLog{}).untilEnded)
	}
	gone := map[int]bool{} // processes crashed
	alive := func() []*replica {
		var out []*replica
		for i, r := range rs {
			if !gone[proc[i]] && r != nil {
				out = append(out, r)
			}
		}
		return out
	}
	leader := func(among []*replica) int {
		for i, r := range rs {
			for _, a := range among {
				if a == r && r.held() {
					return i
				}
			}
		}
		return -1
	}
	waitFor(t, 10*time.Second, "a first leader", func() bool { return leader(rs) >= 0 })

	// Steady state: let the first campaigns spread out, then count.
	time.Sleep(DefaultCampaignEvery)
	var before int64
	for _, c := range locks {
		before += c.calls.Load()
	}
	const window = 10 * time.Second
	time.Sleep(window)
	var after int64
	for _, c := range locks {
		after += c.calls.Load()
	}
	cmds = float64(after-before) / window.Seconds() / float64(n)

	// Graceful: the leader drains (its release wakes the others, or not).
	old := leader(rs)
	rs[old].shutdown()
	drained := time.Now()
	rs[old] = nil
	graceful = waitFor(t, DefaultTTL+2*DefaultCampaignEvery, "a leader after the drain", func() bool { return leader(alive()) >= 0 }).Sub(drained)

	// Crash: the leader's process dies; again, while another process has a
	// replica left, up to crashes times. The figures are the means.
	crashes := 1
	if b.name == "redis" {
		crashes = 3 // the lease lapses at a random point of the waiters' intervals
	}
	k := 0
	for ; k < crashes; k++ {
		time.Sleep(DefaultCampaignEvery) // let the waiters' campaigns spread out again
		old = leader(alive())
		others := 0
		for i, r := range rs {
			if r != nil && !gone[proc[i]] && proc[i] != proc[old] {
				others++
			}
		}
		if others == 0 && k > 0 {
			break // nobody would be left to take over
		}
		dead := locks[proc[old]]
		var left time.Duration
		if h, err := locks[(proc[old]+1)%procs].Lock.Inspect(context.Background(), key); err == nil && b.name == "redis" {
			left = h.TTL // what the lease still has to live (PTTL)
		}
		dead.dead.Store(true)
		if dead.close != nil {
			dead.close()
		}
		gone[proc[old]] = true
		died := time.Now()
		c := waitFor(t, DefaultTTL+2*DefaultCampaignEvery, "a leader after the crash", func() bool { return leader(alive()) >= 0 }).Sub(died)
		crash += c
		afterLapse += c - left
	}
	for p := range gone {
		locks[p].dead.Store(false) // so that the cleanup's drains end quickly
	}
	return cmds, graceful, crash / time.Duration(k), afterLapse / time.Duration(k)
}

// wakeName is how the figures name a replica's way of waiting: "poll" with
// Config.Poll, "on_release" without (internal/cmd/bench reads these names).
func wakeName(poll bool) string {
	if poll {
		return "poll"
	}
	return "on_release"
}

// TestFleetFigures prints, for make bench, one line per backend, wake mode and fleet
// size: fleet_figure backend=… wake=… n=… cmds_per_s=… graceful_ms=… crash_ms=….
// SW_BENCH_SIZES overrides the sizes (default 3,10,30).
func TestFleetFigures(t *testing.T) {
	if os.Getenv("SW_BENCH") != "1" {
		t.Skip("set SW_BENCH=1 to measure fleet figures (run with -v to see them)")
	}
	sizes := []int{3, 10, 30}
	if v := os.Getenv("SW_BENCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, b := range backends(t) {
		for _, n := range sizes {
			for _, poll := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/%d", b.name, wakeName(poll), n), func(t *testing.T) {
					cmds, g, c, a := fleetFigure(t, b, poll, n)
					t.Logf("fleet_figure backend=%s wake=%s n=%d cmds_per_s=%.3f graceful_ms=%.1f crash_ms=%.1f after_lapse_ms=%.1f",
						b.name, wakeName(poll), n, cmds, millis(g), millis(c), millis(a))
				})
			}
		}
	}
}
