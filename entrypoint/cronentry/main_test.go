package cronentry

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // zones do not depend on the machine's tzdata

	"github.com/servicewright/servicewright/internal/testenv"
)

var env testenv.Env

// TestMain starts the package's services once; testenv.Run stops them and then
// checks for leaked goroutines with goleak.Find, as goleak.VerifyTestMain would.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, testenv.WithRedis()))
}

// epoch is where a synctest bubble's clock starts.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns the bubble time d after epoch.
func at(d time.Duration) time.Time { return epoch.Add(d) }

// recorder collects the ticks its runs were given.
type recorder struct {
	mu    sync.Mutex
	ticks []Tick
}

// run returns a Run that records its tick and then works for d, or until its ctx
// is done (returning ctx.Err()).
func (r *recorder) run(d time.Duration) func(context.Context, Tick) error {
	return func(ctx context.Context, t Tick) error {
		r.mu.Lock()
		r.ticks = append(r.ticks, t)
		r.mu.Unlock()
		if d == 0 {
			return nil
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *recorder) all() []Tick {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ticks)
}

func (r *recorder) scheduled() []time.Time {
	var out []time.Time
	for _, t := range r.all() {
		out = append(out, t.Scheduled.UTC())
	}
	return out
}

// serving is a Scheduler driven as the Host drives it: bound, then serving in the
// background until the test closes stop.
type serving struct {
	t      *testing.T
	s      *Scheduler
	stop   chan struct{}
	once   sync.Once
	served chan error
}

// start makes a Scheduler of jobs, lets prep adjust it (test hooks), binds it and
// serves it in the background. A job that asks for no jitter of its own gets none
// (NoJitter), so that its ticks fire on time; startJittered keeps the default.
func start(t *testing.T, jobs []Job, prep func(*Scheduler), opts ...Option) *serving {
	t.Helper()
	jobs = slices.Clone(jobs)
	for i, j := range jobs {
		if j.Jitter == 0 && j.JitterFraction == 0 {
			jobs[i].NoJitter = true
		}
	}
	return startJittered(t, jobs, prep, opts...)
}

// startJittered is start with the jobs as given: the default jitter applies.
func startJittered(t *testing.T, jobs []Job, prep func(*Scheduler), opts ...Option) *serving {
	t.Helper()
	s, err := New(Config{Name: "cron"}, jobs, opts...)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	if prep != nil {
		prep(s)
	}
	if err := s.Bind(context.Background()); err != nil {
		t.Fatalf("Bind = %v", err)
	}
	x := &serving{t: t, s: s, stop: make(chan struct{}), served: make(chan error, 1)}
	go func() { x.served <- s.Serve(context.Background(), x.stop) }()
	return x
}

// closeStop closes stop, as the Host does when shutdown begins, and checks that
// Serve returns nil at once.
func (x *serving) closeStop() {
	x.t.Helper()
	x.once.Do(func() {
		close(x.stop)
		select {
		case err := <-x.served:
			if err != nil {
				x.t.Errorf("Serve = %v, want nil", err)
			}
		case <-time.After(5 * time.Second): // a failure bound; in a bubble Serve returns before time moves
			x.t.Error("Serve did not return when stop closed")
		}
	})
}

// shutdown closes stop, drains and stops without a deadline.
func (x *serving) shutdown() {
	x.t.Helper()
	x.closeStop()
	if err := x.s.Drain(context.Background()); err != nil {
		x.t.Errorf("Drain = %v", err)
	}
	if err := x.s.Stop(context.Background()); err != nil {
		x.t.Errorf("Stop = %v", err)
	}
}

// count returns how many ticks of job ended in o.
func (s *Scheduler) count(job string, o outcome) uint64 {
	for _, j := range s.jobs {
		if j.Name == job {
			return j.stats.count(o)
		}
	}
	return 0
}

// pauseOnce returns an afterWake hook that pauses the scheduling goroutine for d
// the first time it wakes at or after from: the process was frozen.
func pauseOnce(from, d time.Duration) func() {
	done := false
	return func() {
		if !done && !time.Now().Before(at(from)) {
			done = true
			time.Sleep(d)
		}
	}
}

func times(ds ...time.Duration) []time.Time {
	out := make([]time.Time, len(ds))
	for i, d := range ds {
		out[i] = at(d)
	}
	return out
}
