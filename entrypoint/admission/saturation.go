package admission

import (
	"math"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// The share of ordinary units a saturated process admits is a fixed-point number:
// shareOne admits every unit.
const (
	shareBits = 16
	shareOne  = 1 << shareBits
	// shareFloor is the lowest share: one unit in 64 is admitted however saturated
	// the process is, so that windows keep closing on their samples and the share
	// keeps measuring.
	shareFloor = shareOne / 64
)

// How the share moves each window (see Limiter.saturation).
const (
	// firstCut is the share of a window that found the process saturated while it
	// admitted everything: its units were not all sampled, so the rate it admitted
	// is not known yet.
	firstCut = 0.75
	// backOffMin and backOffMax bound the part of the rate a saturated window
	// admitted that the next ones admit: target/wait of it, so that the queue
	// drains in about a window, and never more than backOffMax, so that the CPUs
	// keep some room and the queue stays short.
	backOffMin, backOffMax = 0.85, 0.95
	// recover is how much the admitted rate grows a window while it is below
	// recoverBelow of the rate last measured at saturation (a back-off went deeper
	// than it needed), and probe how much it grows above that: the rate the CPUs
	// serve may have grown (cheaper requests, a neighbour gone quiet).
	recover, recoverBelow = 1.1, 0.95
	// busyTarget is the share of its CPUs' time a process that refuses units is
	// paced to use, where that can be read: near all of it, with a little room for
	// the queue to stay short.
	busyTarget = 0.97
	// busyFloor is the share of its CPUs' time a process must use for a long
	// queue to count as its own saturation: one that uses less waits behind a
	// neighbour (other processes on the node, a CPU quota), and refusing its own
	// work would not shorten that queue.
	busyFloor = 0.5
	// quietWindows is, where the process's CPU time cannot be read, how many
	// windows in a row may refuse units with the queue delay under a quarter of the
	// target before the pace grows over the capacity measured: that was low.
	quietWindows = 10
	// minWaits is how many scheduler samples a window needs before the share moves
	// on it; the runtime samples one goroutine wake-up in eight.
	minWaits = 4
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

// pass says whether an ordinary unit under the limit is admitted by the share:
// always while the process is not saturated (one atomic load); otherwise the units
// are thinned evenly, not at random — of every 64 arrivals at a share of 16/64,
// every fourth passes — so that what is admitted arrives as regularly as the load
// did and queues no more than it must.
func (l *Limiter) pass() bool {
	s := l.share.Load()
	if s >= shareOne {
		return true
	}
	c := l.credit.Add(s)
	return c>>shareBits != (c-s)>>shareBits
}

// saturation moves the share on one window of span seconds. waits is how many
// runnable goroutines the scheduler sampled in it and wait their mean wait in
// seconds before a CPU ran them: the queue every request joins before any Gate
// sees it. admitted and refused are the ordinary units under the limit that the
// share let through and turned away; admitted is exact only when every unit was
// sampled (exact). busy is the share of the time of its CPUs (GOMAXPROCS) the
// process used, or -1 when unknown.
//
// Over the target (Config.MaxQueueDelay), while the process uses at least half its
// CPUs' time, it is saturated: more units are
// arriving than its CPUs serve, and a concurrency limit cannot tell, since a unit
// that waits for a CPU waits before it is admitted. The rate it admitted then is
// what its CPUs serve, and the Limiter paces ordinary units below it: target/wait
// of it, at most 95 %, so that the queue drains and then stays short. It raises
// the pace each window that refused units without queueing — by a tenth while the
// pace is under what was last measured at saturation, by a hundredth above — and
// sets the share to the pace over the rate that arrives, the units it admits
// spread evenly (pass). As TCP's BBR paces at the bandwidth it measured, the share
// paces at the capacity instead of searching for it by overshooting it a window's
// worth of queue at a time.
//
// It reports whether the process looks near saturation (the wait over a quarter
// of the target, or a share below one), which makes every unit sampled so that the
// next window is exact.
func (l *Limiter) saturation(waits uint64, wait, busy float64, admitted, refused int64, span float64, exact bool) (hot bool) {
	if waits < minWaits || span <= 0 {
		return l.share.Load() < shareOne
	}
	target := l.cfg.MaxQueueDelay.Seconds()
	share := float64(l.share.Load()) / shareOne
	saturated := wait > target && (busy < 0 || busy >= busyFloor)
	switch {
	case !exact:
		if saturated {
			share = min(share, firstCut)
		}
	case saturated:
		rate := float64(admitted) / span
		if rate >= l.pace*recoverBelow || l.capacity == 0 {
			l.capacity = rate // the CPUs' rate, unless the pace itself held it down
		}
		l.pace = rate * max(backOffMin, min(backOffMax, target/wait))
	case refused > 0 && busy > 0:
		// Pace at the rate that would keep the CPUs busyTarget busy, moving by at
		// most a tenth a window.
		rate := float64(admitted) / span
		l.pace = max(l.pace/recover, min(l.pace*recover, rate*busyTarget/busy))
	case refused > 0 && wait < target/2:
		l.quiet++
		if l.pace < recoverBelow*l.capacity || l.quiet >= quietWindows {
			l.pace *= recover
			l.capacity = max(l.capacity, l.pace)
		}
	}
	if wait >= target/4 {
		l.quiet = 0
	}
	if exact {
		share = 1
		if arrived := float64(admitted+refused) / span; arrived > l.pace && l.pace > 0 {
			share = l.pace / arrived
		}
	}
	l.share.Store(uint64(max(shareFloor, min(shareOne, share*shareOne))))
	return wait > target/4 || l.share.Load() < shareOne
}

// Share is the fraction of ordinary units under the limit that the Limiter admits:
// 1 unless the process is saturated (see Limiter).
func (l *Limiter) Share() float64 { return float64(l.share.Load()) / shareOne }

// SaturatedCount is how many units were refused since New because the process was
// saturated (its scheduler's queue over Config.MaxQueueDelay), as opposed to the
// concurrency limit (ShedCount).
func (l *Limiter) SaturatedCount() uint64 { return l.saturatedTotal.Load() }

// shareState is the Limiter's part for the share, kept beside its logic.
type shareState struct {
	share          atomic.Uint64 // fixed point, shareOne = all
	credit         atomic.Uint64 // arrivals' shares so far; a unit passes when it crosses a whole
	saturatedTotal atomic.Uint64
	hot            atomic.Bool // sample every unit (see saturation)
	waitN          uint64      // the scheduler's count at the last window's close; under mu
	waitSum        float64     // and its seconds
	waits          waitSource
	cpuTime        func() (time.Duration, bool) // processCPU but in tests
	opened         int64                        // when the window now closing opened, ns since epoch; under mu
	capacity       float64                      // ordinary units a second the CPUs served when last saturated; under mu
	pace           float64                      // ordinary units a second the share admits; 0 until saturated; under mu
	quiet          int                          // windows in a row that refused with a short queue; under mu
	cpu            time.Duration                // processCPU at the last window's close; under mu
	refusedSeen    uint64                       // saturatedTotal at the last window's close; under mu
}

// windowBusy is the share of its CPUs' time the process used over the last span
// seconds, or -1 when that cannot be read. Called with mu held.
func (l *Limiter) windowBusy(span float64) float64 {
	cpu, ok := l.cpuTime()
	if !ok {
		return -1
	}
	used := cpu - l.cpu
	l.cpu = cpu
	return used.Seconds() / (span * float64(runtime.GOMAXPROCS(0)))
}
