package admission

// How the limit moves at the close of a window: the gradient step and its bounds.

import (
	"math"
)

// step closes one window: sum and n are its samples, peak its highest in-flight
// count and shed how many units it refused.
func (l *Limiter) step(now, sum, n, peak, shed int64) {
	if n == 0 {
		return
	}
	rtt := max(1, float64(sum)/float64(n)) // 1ns at least: base/rtt is a number
	lo, hi := float64(l.cfg.MinLimit), float64(l.cfg.MaxLimit)
	switch l.phase {
	case probeSettle:
		l.phase = probeMeasure
		return
	case probeMeasure:
		l.phase = probeNone
		l.base = rtt
		l.set(l.saved)
		return
	}
	if l.base == 0 || rtt < l.base || l.est <= lo {
		l.base = rtt
	}
	if shed > 0 {
		l.shedding++
	} else {
		l.shedding = 0
	}
	if l.shedding >= probeAfter && now >= l.nextProbe && l.est > lo {
		l.nextProbe = now + int64(l.cfg.ProbeInterval)
		l.phase, l.saved = probeSettle, l.est
		l.set(lo)
		return
	}
	gradient := max(0.5, min(1, l.cfg.Tolerance*l.base/rtt))
	if initial := float64(l.cfg.InitialLimit); gradient == 1 && shed == 0 && l.est < initial && !l.saturated.Load() {
		// Recovery: latency is back within tolerance and nothing was refused, so
		// the limit is not what holds the load back. It returns to the unloaded
		// value, doubling each window, whatever share of it the load uses: an easy
		// load may never use half a limit an overload left at two or three, and
		// would otherwise be shed at every coincidence of a few arrivals.
		l.set(min(initial, max(2*l.est, l.est+queue(l.est))))
		return
	}
	target := l.est*gradient + queue(l.est)
	if target > l.est && float64(peak) < l.est/2 {
		return // not using what it has: no reason to climb
	}
	l.set(max(lo, min(hi, l.est+smoothing*(target-l.est))))
}

// queue is how many units beyond the no-load concurrency a limit of est allows to
// wait: log2(est)/2, at least 1. Gradient2Limit allows a constant 4 and Vegas-style
// limiters a multiple of log10(limit); a small queue keeps a CPU-bound service at a
// few units in flight (its latency near the no-load one), and a logarithm lets a
// large limit still climb a unit or more per window.
func queue(est float64) float64 { return max(1, math.Log2(est)/2) }

// set makes est the limit, held within [MinLimit, MaxLimit]; a NaN keeps the limit
// as it was. Nothing the Limiter measures reaches it as NaN (latencies are held to
// [1ns, maxRTT]), but the limit is what keeps the process alive, so the rule is
// kept here too (FuzzLimiter).
func (l *Limiter) set(est float64) {
	if math.IsNaN(est) {
		return
	}
	l.est = max(float64(l.cfg.MinLimit), min(float64(l.cfg.MaxLimit), est))
	l.limit.Store(int64(l.est))
}
