package admission

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"testing/synctest"
	"time"
)

// machine stands for the process's scheduler and CPU clock in a synctest bubble:
// each window the test says how long runnable goroutines waited and how busy the
// CPUs were.
type machine struct {
	waits    uint64
	wsum     float64
	cpu      time.Duration
	held     time.Duration // the time its threads waited for a CPU a neighbour held
	noCPU    bool          // the CPU time cannot be read
	procs    float64
	window   time.Duration
	runnable uint64 // goroutines in the run queue, per CPU
}

func (m *machine) read() (uint64, float64)        { return m.waits, m.wsum }
func (m *machine) cpuTime() (time.Duration, bool) { return m.cpu, !m.noCPU }
func (m *machine) long(perCPU uint64) bool        { return m.runnable > perCPU }
func (m *machine) waited() time.Duration          { return m.held }

// pass lets one window of the machine go by: 50 scheduler samples that waited wait
// each, the CPUs busy for busy of the window.
func (m *machine) pass(wait time.Duration, busy float64) {
	m.waits += 50
	m.wsum += 50 * wait.Seconds()
	m.cpu += time.Duration(busy * m.procs * float64(m.window))
}

func saturable(t *testing.T) (*Limiter, *machine) {
	t.Helper()
	l := newLimiter(t, Config{})
	m := &machine{procs: float64(runtime.GOMAXPROCS(0)), window: l.cfg.Window}
	l.cpuTime = m.cpuTime
	l.waitedTime = m.waited
	l.queueLong = m.long
	l.setWaits(m.read)
	return l, m
}

// offer sends arrivals ordinary units through the Limiter over one window, each
// admitted one a 2ms sample, and returns how many were admitted. The run queue each
// unit finds holds 0, 1, 2 and 3 goroutines in turn.
func offer(l *Limiter, m *machine, arrivals int) int {
	admitted := 0
	for i := range arrivals {
		m.runnable = uint64(i % 4)
		if l.admit() {
			admitted++
			l.Sample(2*time.Millisecond, 1)
		}
	}
	return admitted
}

// round is one window: the machine moves, the clock passes the window, and the
// arrivals are offered; the last admitted sample closes the window.
func round(l *Limiter, m *machine, arrivals int, wait time.Duration, busy float64) int {
	m.pass(wait, busy)
	time.Sleep(l.cfg.Window)
	return offer(l, m, arrivals)
}

func TestSaturation(t *testing.T) {
	t.Run("a saturated process admits a unit only while the run queue is short, and all again once it is not", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, m := saturable(t)
			for range 5 { // 500/s, a short wait: everything passes, whatever the run queue
				if got := round(l, m, 50, 100*time.Microsecond, 0.5); got != 50 {
					t.Fatalf("unsaturated window admitted %d of 50", got)
				}
			}
			if l.Share() != 1 || l.saturated.Load() {
				t.Fatalf("share = %v, saturated %v before any saturation; want 1 and not", l.Share(), l.saturated.Load())
			}
			// 4000/s arrive; the CPUs are all busy and runnable goroutines wait 10ms.
			round(l, m, 400, 10*time.Millisecond, 1)
			if !l.saturated.Load() {
				t.Fatal("not saturated after a window waiting twice the target with the CPUs busy")
			}
			// The run queue now stays short (what it admits is what the CPUs serve):
			// a unit passes only behind at most one runnable goroutine.
			admitted := round(l, m, 400, 500*time.Microsecond, 1)
			if admitted != 200 {
				t.Fatalf("a saturated window admitted %d of 400, want the 200 that found at most one goroutine in the run queue", admitted)
			}
			round(l, m, 400, 500*time.Microsecond, 1) // closes a window of refusals
			if s := l.Share(); s < 0.45 || s > 0.55 {
				t.Fatalf("share = %v, want about the half admitted", s)
			}
			if l.SaturatedCount() == 0 {
				t.Fatal("SaturatedCount = 0 after refusals")
			}
			// The load falls to 250/s, the CPUs half idle: every unit passes again.
			m.runnable = 0
			for range 3 {
				round(l, m, 25, 100*time.Microsecond, 0.5)
			}
			if got := round(l, m, 25, 100*time.Microsecond, 0.5); got != 25 || l.Share() != 1 || l.saturated.Load() {
				t.Fatalf("after the load fell: %d of 25 admitted, share %v, saturated %v; want all, 1, not", got, l.Share(), l.saturated.Load())
			}
		})
	})

	t.Run("the run queue's bound grows while refusals leave the CPUs idle, and halves when the wait is long again", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, m := saturable(t)
			round(l, m, 400, 10*time.Millisecond, 1)
			if !l.saturated.Load() || l.perCPU.Load() != 1 {
				t.Fatalf("saturated %v, bound %d per CPU; want saturated at 1", l.saturated.Load(), l.perCPU.Load())
			}
			// Each unit brings three goroutines: refusals at a bound of one leave the
			// CPUs a third idle. The bound grows until every unit passes.
			for range 5 {
				round(l, m, 400, time.Millisecond, 0.6)
			}
			if got := l.perCPU.Load(); got < 3 {
				t.Fatalf("bound %d per CPU after five windows refusing with the CPUs 60%% busy, want at least 3", got)
			}
			if got := offer(l, m, 40); got != 40 {
				t.Fatalf("at a bound of %d, %d of 40 passed, want all", l.perCPU.Load(), got)
			}
			before := l.perCPU.Load()
			round(l, m, 400, 10*time.Millisecond, 1)
			if got := l.perCPU.Load(); got != max(1, before/2) {
				t.Fatalf("bound %d after a window waiting twice the target, want half of %d", got, before)
			}
		})
	})

	// Another process takes 40% of the CPUs: every window refuses units (the run
	// queue is long) with the CPUs 60% the process's. neighbour runs forty such
	// windows; with held, the process's threads are seen to wait for the 40%.
	neighbour := func(l *Limiter, m *machine, held bool) {
		for range 40 {
			m.pass(time.Millisecond, 0.6)
			if held {
				m.held += time.Duration(0.4 * m.procs * float64(m.window))
			}
			time.Sleep(l.cfg.Window)
			m.runnable = 100
			for range 40 {
				l.admit()
			}
			m.runnable = 0
			for range minSamples {
				if l.admit() {
					l.Sample(2*time.Millisecond, 1)
				}
			}
		}
	}
	t.Run("the CPU time a neighbour held is not room: the run queue's bound stays", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, m := saturable(t)
			round(l, m, 400, 10*time.Millisecond, 1)
			neighbour(l, m, true)
			if got := l.perCPU.Load(); got != 1 {
				t.Fatalf("bound %d per CPU after forty windows with the CPUs busy all the time a neighbour left them, want 1", got)
			}
		})
	})

	t.Run("a neighbour keeping the CPUs' time low does not grow the run queue's bound past its cap", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, m := saturable(t)
			round(l, m, 400, 10*time.Millisecond, 1)
			neighbour(l, m, false) // the waits unseen: a CPU quota, or no /proc
			if got := l.perCPU.Load(); got != maxQueuePerCPU || got > 4 {
				t.Fatalf("bound %d per CPU after forty windows behind a neighbour, want the cap %d (at most 4: what is admitted waits behind them)", got, maxQueuePerCPU)
			}
		})
	})

	t.Run("where the CPU time cannot be read, quiet windows end the saturation", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, m := saturable(t)
			m.noCPU = true
			round(l, m, 400, 10*time.Millisecond, 1)
			if !l.saturated.Load() {
				t.Fatal("not saturated after a window waiting twice the target")
			}
			quiet := func() { // a window in which every unit finds the run queue empty
				m.pass(100*time.Microsecond, 0)
				time.Sleep(l.cfg.Window)
				for range minSamples {
					m.runnable = 0
					if l.admit() {
						l.Sample(2*time.Millisecond, 1)
					}
				}
			}
			quiet() // closes the window that saturated, and refused
			for i := range quietWindows {
				if !l.saturated.Load() {
					t.Fatalf("saturation ended after %d quiet windows, want %d", i, quietWindows)
				}
				quiet()
			}
			if l.saturated.Load() {
				t.Fatalf("still saturated after %d windows that refused nothing", quietWindows)
			}
		})
	})

	t.Run("a queue behind a neighbour is not saturation", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, m := saturable(t)
			for range 30 { // the CPUs a fifth busy with this process's work
				round(l, m, 100, 20*l.cfg.MaxQueueDelay, 0.2)
			}
			if l.Share() != 1 || l.SaturatedCount() != 0 {
				t.Fatalf("share %v, %d refused while the process used a fifth of its CPUs; want 1 and none", l.Share(), l.SaturatedCount())
			}
		})
	})

	t.Run("a short queue is not saturation", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, m := saturable(t)
			for range 30 {
				round(l, m, 100, l.cfg.MaxQueueDelay/2, 1)
			}
			if l.Share() != 1 || l.SaturatedCount() != 0 {
				t.Fatalf("share %v, %d refused under a queue delay of half the target; want 1 and none", l.Share(), l.SaturatedCount())
			}
		})
	})
}

// TestRunQueueMetrics checks that the runtime publishes what runQueue reads, and
// that a bound no run queue here reaches is not long.
func TestRunQueueMetrics(t *testing.T) {
	want := map[string]bool{"/sched/goroutines/runnable:goroutines": false, "/sched/gomaxprocs:threads": false, "/sched/latencies:seconds": false}
	for _, d := range metrics.All() {
		if _, ok := want[d.Name]; ok {
			want[d.Name] = true
		}
	}
	for name, ok := range want {
		if !ok {
			t.Errorf("runtime/metrics has no %s", name)
		}
	}
	if runQueue()(1 << 20) {
		t.Error("runQueue says a run queue is longer than a million goroutines per CPU")
	}
}

// BenchmarkRunQueue is what a saturated process pays per ordinary unit to read its
// run queue.
func BenchmarkRunQueue(b *testing.B) {
	long := runQueue()
	for b.Loop() {
		long(1)
	}
}

// The time the process's threads waited for a CPU only grows.
func TestProcessWaited(t *testing.T) {
	a := processWaited()
	for range 1_000_000 {
		_ = runtime.NumGoroutine()
	}
	if b := processWaited(); a < 0 || b < a {
		t.Fatalf("processWaited went from %v to %v, want a non-negative count that only grows", a, b)
	}
}
