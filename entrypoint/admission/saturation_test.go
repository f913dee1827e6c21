package admission

import (
	"testing"
	"testing/synctest"
	"time"
)

// machine stands for the process's scheduler and CPU clock in a synctest bubble:
// each window the test says how long runnable goroutines waited and how busy the
// CPUs were.
type machine struct {
	waits  uint64
	wsum   float64
	cpu    time.Duration
	procs  float64
	window time.Duration
}

func (m *machine) read() (uint64, float64)        { return m.waits, m.wsum }
func (m *machine) cpuTime() (time.Duration, bool) { return m.cpu, true }

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
	m := &machine{procs: 1, window: l.cfg.Window}
	l.cpuTime = m.cpuTime
	l.setWaits(m.read)
	return l, m
}

// offer sends arrivals ordinary units through the Limiter over one window, each
// admitted one a 2ms sample, and returns how many were admitted.
func offer(l *Limiter, arrivals int) int {
	admitted := 0
	for range arrivals {
		if l.Admit() {
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
	return offer(l, arrivals)
}

func TestSaturation(t *testing.T) {
	t.Run("a saturated process admits a share paced at what its CPUs served, and all again once it is not", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, m := saturable(t)
			for range 5 { // 500/s, a short queue: everything passes
				if got := round(l, m, 50, 100*time.Microsecond, 0.5); got != 50 {
					t.Fatalf("unsaturated window admitted %d of 50", got)
				}
			}
			if l.Share() != 1 {
				t.Fatalf("share = %v before any saturation, want 1", l.Share())
			}
			// 4000/s arrive; the CPUs serve 500/s: the queue delay is 10ms.
			var admitted int
			for i := range 20 {
				wait := 10 * time.Millisecond
				if i > 5 && l.Share() < 0.2 {
					wait = 500 * time.Microsecond // the share drained the queue
				}
				admitted = round(l, m, 400, wait, 1)
			}
			if s := l.Share(); s >= 0.5 || s*shareOne < shareFloor {
				t.Fatalf("share = %v after 20 saturated windows, want under 0.5 and at least the floor", s)
			}
			if admitted > 100 {
				t.Fatalf("a saturated window admitted %d of 400, want about what the CPUs served (50)", admitted)
			}
			if l.SaturatedCount() == 0 {
				t.Fatal("SaturatedCount = 0 after refusals")
			}
			// The load falls to 250/s, the CPUs half idle: every unit passes again.
			for range 30 {
				round(l, m, 25, 100*time.Microsecond, 0.5)
			}
			if got := round(l, m, 25, 100*time.Microsecond, 0.5); got != 25 || l.Share() != 1 {
				t.Fatalf("after the load fell: %d of 25 admitted, share %v; want all and 1", got, l.Share())
			}
		})
	})

	t.Run("never falls below its floor", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, m := saturable(t)
			for range 60 {
				round(l, m, 2000, time.Second, 1)
				if l.share.Load() < shareFloor {
					t.Fatalf("share %v below the floor %v", l.Share(), float64(shareFloor)/shareOne)
				}
			}
			if got := offer(l, 640); got < 640/64 {
				t.Fatalf("at the floor, %d of 640 passed, want at least one in 64", got)
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

func TestSharePassesEvenly(t *testing.T) {
	l := newLimiter(t, Config{})
	l.share.Store(shareOne / 4)
	run := 0
	for i := range 64 {
		if l.pass() {
			if i > 0 && run != 3 {
				t.Fatalf("arrival %d passed after %d refusals, want every fourth to pass", i, run)
			}
			run = 0
		} else {
			run++
		}
	}
}
