package cronentry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/lock"
)

// fleetRecorder counts runs per tick across replicas.
type fleetRecorder struct {
	mu    sync.Mutex
	runs  map[time.Time][]string // tick (UTC) → owners that ran it
	ticks []Tick
}

func (f *fleetRecorder) run(owner string) func(context.Context, Tick) error {
	return func(_ context.Context, t Tick) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.runs == nil {
			f.runs = map[time.Time][]string{}
		}
		k := t.Scheduled.UTC()
		f.runs[k] = append(f.runs[k], owner)
		f.ticks = append(f.ticks, t)
		return nil
	}
}

func TestOncePerFleet(t *testing.T) {
	s := time.Second

	t.Run("each tick runs on exactly one replica and the lease is not released", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lk := lock.NewMemory()
			var rec fleetRecorder
			var xs []*serving
			for _, owner := range []string{"a", "b", "c"} {
				xs = append(xs, start(t, []Job{{
					Name: "report", Every: s, Jitter: 500 * time.Millisecond,
					OncePerFleet: OncePerFleet(lk, owner, 2*s), Run: rec.run(owner),
				}}, nil))
			}
			time.Sleep(20*s + s/2)
			// The lease of the tick just run is still held: releasing it would let
			// a late replica run the tick again.
			h, err := lk.Inspect(context.Background(), "cron:report:2000-01-01T00:00:20Z")
			if err != nil || !h.Held() {
				t.Errorf("Inspect = %+v, %v; want the 0:20 lease still held", h, err)
			}
			for _, x := range xs {
				x.shutdown()
			}
			if len(rec.runs) != 20 {
				t.Errorf("%d ticks ran, want 20", len(rec.runs))
			}
			for tick, owners := range rec.runs {
				if len(owners) != 1 {
					t.Errorf("tick %v ran on %v, want exactly one replica", tick, owners)
				}
			}
			var others, oks uint64
			for _, x := range xs {
				others += x.s.count("report", skippedOtherReplica)
				oks += x.s.count("report", succeeded)
			}
			if oks != 20 || others != 40 {
				t.Errorf("ok = %d, skipped_other_replica = %d; want 20 and 40", oks, others)
			}
			for _, tk := range rec.ticks {
				if tk.Token == 0 {
					t.Errorf("tick %v has no fencing token", tk.Scheduled)
				}
			}
		})
	})

	t.Run("a tick reached after its time plus the TTL is not attempted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lk := lock.NewMemory()
			var rec fleetRecorder
			x := start(t, []Job{{
				Name: "report", Every: 10 * s, MissedAfter: 5 * s,
				OncePerFleet: OncePerFleet(lk, "a", s), Run: rec.run("a"),
			}}, func(sc *Scheduler) { sc.afterWake = pauseOnce(0, 1500*time.Millisecond) })
			time.Sleep(12 * s)
			if len(rec.ticks) != 0 {
				t.Errorf("runs = %+v, want none: the 0:10 lease may have lapsed by 0:11.5", rec.ticks)
			}
			if n := x.s.count("report", skippedMissed); n != 1 {
				t.Errorf("skipped_missed = %d, want 1", n)
			}
			if h, _ := lk.Inspect(context.Background(), "cron:report:2000-01-01T00:00:10Z"); h.Fence != 0 {
				t.Errorf("the lk was asked (fence %d), want not", h.Fence)
			}
			x.shutdown()
		})
	})

	t.Run("a lk that fails counts lock_error and runs nothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec fleetRecorder
			x := start(t, []Job{{
				Name: "report", Every: s,
				OncePerFleet: OncePerFleet(brokenLock{}, "a", 2*s), Run: rec.run("a"),
			}}, nil)
			time.Sleep(3*s + s/2)
			x.shutdown()
			if len(rec.ticks) != 0 {
				t.Errorf("%d runs, want 0", len(rec.ticks))
			}
			if n := x.s.count("report", lockError); n != 3 {
				t.Errorf("lock_error = %d, want 3", n)
			}
		})
	})

	t.Run("the run's deadline defaults to the TTL", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var took time.Duration
			run := func(ctx context.Context, tk Tick) error {
				<-ctx.Done()
				took = time.Since(tk.Fired)
				return ctx.Err()
			}
			x := start(t, []Job{{
				Name: "report", Every: time.Minute,
				OncePerFleet: OncePerFleet(lock.NewMemory(), "a", 7*s), Run: run,
			}}, nil)
			time.Sleep(time.Minute + 8*s)
			x.shutdown()
			if took != 7*s {
				t.Errorf("run ended after %v, want 7s (the TTL)", took)
			}
		})
	})
}

type brokenLock struct{ lock.Lock }

func (brokenLock) Acquire(context.Context, string, string, time.Duration) (lock.Lease, error) {
	return lock.Lease{}, errors.New("redis: connection refused")
}

func TestMarks(t *testing.T) {
	run := func(context.Context, Tick) error { return nil }
	lk := lock.NewMemory()
	plain := Job{Name: "plain", Every: time.Second, Run: run}
	guarded := Job{Name: "guarded", Every: time.Second, Run: run, OncePerFleet: OncePerFleet(lk, "a", time.Second)}
	mutating := Job{Name: "mutating", Every: time.Second, Run: run, Marks: fleet.Marks{MutatesSharedState: true}}
	tests := []struct {
		name       string
		jobs       []Job
		want       fleet.Marks
		fleetAllow bool
	}{
		{"read-only jobs", []Job{plain}, fleet.Marks{RequiresLongRunning: true}, true},
		{"a once-per-fleet job", []Job{plain, guarded}, fleet.Marks{MutatesSharedState: true, SingletonGuarded: true, RequiresLongRunning: true}, true},
		{"a mutating job on every replica", []Job{guarded, mutating}, fleet.Marks{MutatesSharedState: true, RequiresLongRunning: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Name: "cron"}, tc.jobs)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Marks(); got != tc.want {
				t.Errorf("Marks = %+v, want %+v", got, tc.want)
			}
			if got := fleet.Fleet.Check(s.Marks()) == ""; got != tc.fleetAllow {
				t.Errorf("fleet.Fleet allows = %v, want %v", got, tc.fleetAllow)
			}
			if fleet.Serverless.Check(s.Marks()) == "" {
				t.Error("fleet.Serverless allows a Scheduler")
			}
		})
	}
}
