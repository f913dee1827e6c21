package admission

import (
	"math"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// The share a saturated process admitted is kept as a fixed-point number for its
// gauge: shareOne is every unit.
const (
	shareBits = 16
	shareOne  = 1 << shareBits
)

// When a process counts as saturated, and when no longer (see Limiter.saturation).
const (
	// busyFloor is the share of its CPUs' time a process must use for a long
	// queue to count as its own saturation: one that uses less waits behind a
	// neighbour (other processes on the node, a CPU quota), and refusing its own
	// work would not shorten that queue.
	busyFloor = 0.5
	// busyExit is the share of its CPUs' time under which a saturated process is
	// saturated no longer: its CPUs have room again. Well under all of them, so
	// that a neighbour taking a slice of one window does not end the saturation
	// and let a window's worth of queue in.
	busyExit = 0.75
	// quietWindows is how many windows in a row without a refusal end the
	// saturation too (the only way where the process's CPU time cannot be read):
	// the queue stayed short with every unit admitted.
	quietWindows = 10
	// minWaits is how many scheduler samples a window needs before it can start a
	// saturation; the runtime samples one goroutine wake-up in eight.
	minWaits = 4
	// busyTarget is the share of its CPUs' time under which a saturated process
	// that refuses units lets its run queue grow (see Limiter.saturation).
	busyTarget = 0.95
	// maxQueuePerCPU bounds how many runnable goroutines per CPU the run queue may
	// hold when a saturated process admits a unit: what is admitted waits behind
	// them. Four covers a gRPC call (a connection's reader and writer besides the
	// handler). It must be small because where the time a neighbour holds the CPU
	// cannot be seen (a CPU quota's throttling, a platform without
	// /proc/self/task/*/schedstat) the process's CPU time stays under busyTarget
	// whatever it does and the bound grows to the cap: at 64, a CPU-bound server on
	// a shared core let the p99 of what it admitted at 4× its capacity grow from
	// about 22ms to 32ms (internal/cmd/openloop) for no more goodput.
	maxQueuePerCPU = 4
)

// A waitSource reports the Go scheduler's latency so far: how many runnable
// goroutines it sampled and the seconds they waited, in total, before they ran.
type waitSource func() (count uint64, seconds float64)

// schedWaits is the waitSource of the running process: the runtime's
// /sched/latencies:seconds histogram, summed at each bucket's midpoint. It reuses
// one sample, so a read allocates nothing after the first; it is read once a
// window, by the Finish that closes it, under the Limiter's lock.
func schedWaits() waitSource {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	return func() (uint64, float64) {
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindFloat64Histogram {
			return 0, 0 // a runtime without the metric: never saturated
		}
		h := s[0].Value.Float64Histogram()
		var n uint64
		var sum float64
		for i, c := range h.Counts {
			if c == 0 {
				continue
			}
			lo, hi := h.Buckets[i], h.Buckets[i+1]
			switch {
			case math.IsInf(lo, -1):
				lo = hi
			case math.IsInf(hi, 1):
				hi = lo
			}
			n += c
			sum += float64(c) * (lo + hi) / 2
		}
		return n, sum
	}
}

// A queueSource reports whether the Go scheduler's run queue holds more than
// perCPU runnable goroutines per CPU (GOMAXPROCS).
type queueSource func(perCPU uint64) (long bool)

// runQueue is the queueSource of the running process, from runtime/metrics: the
// runnable goroutines and GOMAXPROCS, read together. A read takes the scheduler's
// lock for a moment, walks the Ps' run queues and costs about 90ns without
// allocating (BenchmarkRunQueue); it is made only for units
// that arrive while the process is saturated, one at a time: a unit that finds
// another reading takes the answer that one read last.
func runQueue() queueSource {
	var mu sync.Mutex
	var last atomic.Bool
	s := []metrics.Sample{
		{Name: "/sched/goroutines/runnable:goroutines"},
		{Name: "/sched/gomaxprocs:threads"},
	}
	return func(perCPU uint64) bool {
		if !mu.TryLock() {
			return last.Load()
		}
		defer mu.Unlock()
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
			return false // a runtime without the metrics: the queue is never long
		}
		long := s[0].Value.Uint64() > perCPU*s[1].Value.Uint64()
		last.Store(long)
		return long
	}
}

// pass says whether an ordinary unit under the limit is admitted by the run queue:
// always while the process is not saturated (one atomic load); otherwise only while
// the scheduler's run queue is short — at most perCPU runnable goroutines per CPU.
// A unit passes when the CPUs are about to need it and is refused when it would
// queue, which bounds the wait of what is admitted to about one unit's service time
// and leaves the CPUs no time to idle while units arrive.
func (l *Limiter) pass() bool {
	if !l.saturated.Load() {
		return true
	}
	if l.queueLong(l.perCPU.Load()) {
		return false
	}
	l.admittedSaturated.Add(1)
	return true
}

// saturation decides, on one window, whether the process is saturated. waits is
// how many runnable goroutines the scheduler sampled in the window and wait their
// mean wait in seconds before a CPU ran them: the queue every unit joins before any
// Gate sees it. busy is the share of the time of its CPUs (GOMAXPROCS) the process
// used, or -1 when unknown; room the share of the time the CPUs were its own (not
// held by a neighbour) that it left unused, or -1 when unknown; and refused how
// many units the run queue turned away.
//
// The process becomes saturated when the wait is over Config.MaxQueueDelay while it
// uses at least half its CPUs' time: more units arrive than its CPUs serve, and a
// concurrency limit cannot tell, since a unit that waits for a CPU waits before it
// is admitted. It stays saturated until a window uses under busyExit of its CPUs
// without refusing any, or quietWindows windows in a row refuse nothing.
//
// While saturated, units pass by the length of the run queue (see pass) rather than
// by the wait: a queue kept short no longer shows in the wait, which would
// otherwise end the saturation and let the queue grow again, a window at a time. As
// CoDel judges a queue by how long its packets stay rather than by its length, the
// wait starts the saturation; as a bounded queue drops what arrives when it is
// full, the run queue picks the units. How many runnable goroutines a unit brings
// depends on its transport (one per HTTP/1 request; a connection's reader and
// writer besides the handler for gRPC), so the bound per CPU adapts: it starts at
// one, grows by one each window that refused units while the CPUs had room (over
// 1−busyTarget of the time they were the process's, not a neighbour's, left
// unused) and the wait was short, up to maxQueuePerCPU, and halves when the wait
// is over the target again.
func (l *Limiter) saturation(waits uint64, wait, busy, room float64, refused int64) {
	target := l.cfg.MaxQueueDelay.Seconds()
	if !l.saturated.Load() {
		if waits >= minWaits && wait > target && (busy < 0 || busy >= busyFloor) {
			l.perCPU.Store(1)
			l.saturated.Store(true)
			l.quiet = 0
		}
		return
	}
	if refused > 0 {
		l.quiet = 0
	} else {
		l.quiet++
	}
	perCPU := l.perCPU.Load()
	switch {
	case waits >= minWaits && wait > target:
		l.perCPU.Store(max(1, perCPU/2))
	case refused > 0 && room > 1-busyTarget && wait < target/2:
		l.perCPU.Store(min(maxQueuePerCPU, perCPU+1))
	case refused == 0 && busy >= 0 && busy < busyExit, l.quiet >= quietWindows:
		l.saturated.Store(false)
	}
}

// Share is the fraction of ordinary units under the limit that the Limiter
// admitted in its last window: 1 unless the process is saturated (see Limiter).
func (l *Limiter) Share() float64 { return float64(l.share.Load()) / shareOne }

// SaturatedCount is how many units were refused since New because the process was
// saturated (its scheduler's queue long), as opposed to the concurrency limit
// (ShedCount), its classes' (NewClass) included.
func (l *Limiter) SaturatedCount() uint64 { return l.saturatedTotal.Load() + l.classSaturated.Load() }

// shareState is the Limiter's part for saturation, kept beside its logic.
type shareState struct {
	saturated         atomic.Bool
	perCPU            atomic.Uint64 // runnable goroutines per CPU a saturated process admits a unit behind
	share             atomic.Uint64 // what the last window admitted, fixed point; for Share
	admittedSaturated atomic.Uint64 // units pass admitted while saturated
	saturatedTotal    atomic.Uint64 // units pass refused
	waits             waitSource
	queueLong         queueSource
	cpuTime           func() (time.Duration, bool) // processCPU but in tests
	waitedTime        func() time.Duration         // processWaited but in tests
	waited            time.Duration                // waitedTime at the last window's close; under mu
	waitN             uint64                       // the scheduler's count at the last window's close; under mu
	waitSum           float64                      // and its seconds
	opened            int64                        // when the window now closing opened, ns since epoch; under mu
	quiet             int                          // saturated windows in a row that refused nothing; under mu
	cpu               time.Duration                // processCPU at the last window's close; under mu
	admittedSeen      uint64                       // admittedSaturated at the last window's close; under mu
	refusedSeen       uint64                       // saturatedTotal at the last window's close; under mu
}

// windowBusy is the share of its CPUs' time the process used over the last span
// seconds, or -1 when that cannot be read; and room, the share of the time its
// CPUs were its own that it left unused: the time its threads waited for a CPU a
// neighbour held is not room. Called with mu held.
func (l *Limiter) windowBusy(span float64) (busy, room float64) {
	cpu, ok := l.cpuTime()
	if !ok {
		return -1, -1
	}
	used := cpu - l.cpu
	l.cpu = cpu
	all := span * float64(runtime.GOMAXPROCS(0))
	busy = used.Seconds() / all
	var waited time.Duration
	if l.waitedTime != nil {
		w := l.waitedTime()
		waited, l.waited = w-l.waited, w
	}
	own := all - waited.Seconds()
	if own <= 0 {
		return busy, 0
	}
	return busy, max(0, 1-used.Seconds()/own)
}
