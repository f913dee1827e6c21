package admission

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// sampleEvery is how many admitted units share one latency sample while less than
// half the limit is in use: the clock costs some 80 ns a read on a virtual machine,
// so timing every unit would cost more than the rest of the Gate. Once half the
// limit is in use, or while the limit is below Config.InitialLimit (recovering from
// an overload: its windows must close at an easy load's pace), every unit is
// timed: the limit is then about to matter. It is a power of two.
const sampleEvery = 16

// minSamples is how many samples a window needs before the limit moves on it.
const minSamples = 8

// smoothing is the share of a window's step the limit takes (as Gradient2Limit's
// smoothing), so that one odd window moves it only half way.
const smoothing = 0.5

// probeAfter is how many consecutive windows must shed before a probe: a burst
// that shed once is no reason to drop to the floor.
const probeAfter = 3

// maxRTT is the longest latency a sample counts: a unit that took longer counts as
// this long. A window's sum of a billion such samples still fits an int64.
const maxRTT = int64(time.Hour)

// probe phases: the Limiter drops to MinLimit, lets one window drain what was
// admitted above it, and measures the next.
const (
	probeNone = iota
	probeSettle
	probeMeasure
)

// A Limiter keeps the adaptive concurrency limit of an entrypoint.Gate.
//
// Each window (Config.Window, and at least a few samples) it compares the mean
// latency of the sampled units, rtt, with the no-load latency, base, and moves the
// limit as Netflix's gradient limiters do:
//
//	gradient = clamp(Tolerance·base / rtt, 0.5, 1)
//	target   = limit·gradient + queue(limit)     (queue: log2(limit)/2, at least 1)
//	limit    = limit + ½·(target − limit), within [MinLimit, MaxLimit]
//
// so the limit falls while latency is above Tolerance times the no-load latency and
// climbs by half a queue per window while it is not. It does not climb while less than
// half of it is used: an idle service keeps the limit it had. Below InitialLimit,
// though, a window within tolerance that refused nothing doubles it (up to
// InitialLimit) whatever share is used: once an overload is over the limit is back
// at its unloaded value within a few windows, rather than kept at the two or three
// an easy load never uses half of, and shed at every few coincident arrivals.
//
// base is the lowest window mean seen. Because a long overload never shows the
// no-load latency, and a service may become slower for good, the Limiter measures it
// afresh as Envoy's adaptive concurrency filter measures its minRTT: every
// ProbeInterval in which it kept shedding, it drops the limit to MinLimit for two windows and
// takes the latency of the second as the new base. At MinLimit itself the latency
// measured is by definition the no-load one.
//
// The hot path (Acquire and Finish of an unsampled unit) takes no lock and
// allocates nothing; one unit in sixteen reads the clock twice. While the process
// is saturated, an ordinary unit also reads the run queue (about 90ns). The window's
// arithmetic runs in the Finish that closes it, under a lock the others skip.
//
// A concurrency limit cannot see a CPU-bound service saturate: a request that waits
// for a CPU waits before its handler runs, so the units in flight stay few and fast
// while the queue in front of them grows without bound. The Limiter therefore
// watches a second signal, the Go scheduler's latency (how long runnable goroutines
// wait for a CPU, from runtime/metrics), once a window. Over Config.MaxQueueDelay
// the process is saturated, and the Limiter admits an ordinary unit under the limit
// only while the scheduler's run queue holds at most one runnable goroutine per
// CPU, so that what it admits waits behind at most one other unit and the CPUs never
// idle while units arrive (see Share and the saturation method). Both
// refusals are Overloaded to the Gate; ShedCount and SaturatedCount tell them
// apart.
//
// A Limiter does not queue: a unit over the limit is refused at once. It does not
// see what never reaches it (the listener's backlog, the TLS handshake).
type Limiter struct {
	cfg   Config
	epoch time.Time

	limit     atomic.Int64
	shedTotal atomic.Uint64

	// A route class's Limiter (NewClass): its own units in flight, and the
	// Limiter its refusals are also counted in.
	held   atomic.Int64
	parent *Limiter
	// The refusals of l's classes, counted in l's ShedCount and SaturatedCount.
	classShed, classSaturated atomic.Uint64

	// The window being filled.
	sum   atomic.Int64 // sampled latencies, ns
	n     atomic.Int64 // samples
	peak  atomic.Int64 // highest in-flight count a sample saw
	shed  atomic.Int64 // units refused
	close atomic.Int64 // when the window may close, ns since epoch

	shareState // whether the process is saturated (saturation.go)

	mu        sync.Mutex // one window's arithmetic at a time; guards the fields below
	est       float64    // the limit, unrounded
	base      float64    // no-load latency, ns; 0 until measured
	phase     int        // probe phase
	saved     float64    // the limit before the probe
	nextProbe int64      // ns since epoch
	shedding  int        // consecutive windows that shed
}

// New checks cfg and returns a Limiter at cfg.InitialLimit. A *fault.ConfigError
// lists every problem, each naming its field and environment variable. With
// cfg.Off it returns nil and no error: admission is off, and the Gate is given no
// limiter at all (Gate.SetLimiter(nil)), not a nil *Limiter inside the interface.
func New(cfg Config) (*Limiter, error) {
	var l fault.Problems
	cfg = cfg.resolve(&l)
	if err := l.Err(); err != nil {
		return nil, err
	}
	if cfg.Off {
		return nil, nil
	}
	lim := &Limiter{cfg: cfg, epoch: time.Now(), est: float64(cfg.InitialLimit)}
	lim.limit.Store(int64(cfg.InitialLimit))
	lim.share.Store(shareOne)
	lim.queueLong = runQueue()
	lim.cpuTime = processCPU
	lim.waitedTime = processWaited
	lim.setWaits(schedWaits())
	lim.close.Store(int64(cfg.Window))
	lim.nextProbe = int64(cfg.Window) * 10 // the first probe comes early, then every ProbeInterval
	return lim, nil
}

// NewClass returns a Limiter for a class of routes: the same Config as l, but a
// limit, a latency baseline and a window of its own, so that routes of different
// cost do not shed each other — a slow write route's latency moves its own limit,
// not that of the cheap reads beside it. Saturation is the process's, so every
// class sees it. Its refusals are counted in l's ShedCount and SaturatedCount too.
// A nil l (admission off) returns nil. Since a Gate counts only its own
// Limiter's units, a class's Limiter counts its own (Hold and Release): see
// entrypoint.Gate.AdmitTo.
func (l *Limiter) NewClass() *Limiter {
	if l == nil {
		return nil
	}
	c, _ := New(l.cfg) // l.cfg was checked
	c.parent = l
	return c
}

// Hold counts one unit in flight against a class's Limiter (NewClass) and returns
// the count, itself included; Release takes it off and returns the count left.
func (l *Limiter) Hold() int { return int(l.held.Add(1)) }

// Release undoes one Hold; see Hold.
func (l *Limiter) Release() int { return int(l.held.Add(-1)) }

// Limit is how many ordinary units may be in flight at once.
func (l *Limiter) Limit() int { return int(l.limit.Load()) }

// Acquire decides on one unit counted against the limit, with inFlight such units
// in flight, itself included; an entrypoint.Gate calls it for each unit of class
// Ordinary or Critical it admits. A refusable (ordinary) unit is refused when
// inFlight exceeds the limit (counted in ShedCount) or, while the process is
// saturated, when the scheduler's run queue is long (counted in SaturatedCount).
// An admitted unit's start, 0 for a unit whose latency is not sampled, goes to
// Finish when it is done.
func (l *Limiter) Acquire(inFlight int, refusable bool) (start int64, ok bool) {
	limit := l.Limit()
	if refusable {
		if inFlight > limit {
			l.refuse()
			return 0, false
		}
		if !l.admit() {
			return 0, false
		}
	}
	return l.begin(inFlight, limit), true
}

// refuse records a unit refused because the limit was reached.
func (l *Limiter) refuse() {
	l.shed.Add(1)
	l.shedTotal.Add(1)
	if l.parent != nil {
		l.parent.classShed.Add(1)
	}
}

// ShedCount is how many units were refused for overload since New, its classes'
// (NewClass) included.
func (l *Limiter) ShedCount() uint64 { return l.shedTotal.Load() + l.classShed.Load() }

// begin is called when a unit is admitted with inFlight ordinary units in flight,
// itself included, under limit (what Limit returned). It returns 0 for a unit that
// is not sampled, and a clock reading to hand to Finish for one that is.
func (l *Limiter) begin(inFlight, limit int) int64 {
	if 2*inFlight < limit && limit >= l.cfg.InitialLimit && rand.Uint32()&(sampleEvery-1) != 0 {
		return 0
	}
	return l.stamp()
}

// stamp is a sample's start: the clock, never 0. It is apart from begin so that
// begin's unsampled path is inlined.
func (l *Limiter) stamp() int64 { return l.now() | 1 }

// Finish is called when a unit admitted with start (from Acquire) is done; inFlight is
// the number of ordinary units in flight including it.
func (l *Limiter) Finish(start int64, inFlight int) {
	if start != 0 {
		l.finish(start, inFlight)
	}
}

func (l *Limiter) finish(start int64, inFlight int) {
	now := l.now()
	l.record(now, now-start, inFlight)
}

// Sample feeds the latency of one admitted unit, measured by the caller, and the
// number of ordinary units in flight when it ended (itself included). A custom
// entrypoint that times its units itself calls it instead of Acquire and Finish.
func (l *Limiter) Sample(rtt time.Duration, inFlight int) {
	l.record(l.now(), int64(rtt), inFlight)
}

func (l *Limiter) now() int64 { return int64(time.Since(l.epoch)) }

func (l *Limiter) record(now, rtt int64, inFlight int) {
	// A latency the clock cannot give (negative: a caller's clock stepped back) or
	// longer than any request is held to what it can be, so that a window's sum
	// never wraps and its mean is a latency.
	l.sum.Add(min(max(rtt, 0), maxRTT))
	n := l.n.Add(1)
	for p := l.peak.Load(); int64(inFlight) > p && !l.peak.CompareAndSwap(p, int64(inFlight)); p = l.peak.Load() {
	}
	if n < minSamples || now < l.close.Load() || !l.mu.TryLock() {
		return
	}
	defer l.mu.Unlock()
	if now < l.close.Load() { // another Finish closed this window first
		return
	}
	l.closeWindow(now)
}

// closeWindow closes the window at now: saturation is decided on it, then the
// limit moves.
// Called with mu held.
func (l *Limiter) closeWindow(now int64) {
	l.close.Store(now + int64(l.cfg.Window))
	n := l.n.Swap(0)
	l.closeShare(now)
	l.step(now, l.sum.Swap(0), n, l.peak.Swap(0), l.shed.Swap(0))
}

// closeShare decides saturation on the window closing at now and records the share
// of units it admitted. Called with mu held.
func (l *Limiter) closeShare(now int64) {
	waits, wait := l.windowWaits()
	span := float64(now-l.opened) / 1e9
	l.opened = now
	admitted := l.admittedSaturated.Load() - l.admittedSeen
	l.admittedSeen += admitted
	refused := l.saturatedTotal.Load() - l.refusedSeen
	l.refusedSeen += refused
	share := uint64(shareOne)
	if refused > 0 {
		share = shareOne * admitted / (admitted + refused)
	}
	l.share.Store(share)
	busy, room := l.windowBusy(span)
	l.saturation(waits, wait, busy, room, int64(refused))
}

// refuseSaturated counts a unit under the limit that the run queue refused (see
// Acquire): every 32nd such refusal also closes a window that is due, so that windows
// keep closing when few admitted units are left to close them.
func (l *Limiter) refuseSaturated() {
	if l.parent != nil {
		l.parent.classSaturated.Add(1)
	}
	if l.saturatedTotal.Add(1)%32 != 0 {
		return
	}
	now := l.now()
	if now < l.close.Load() || !l.mu.TryLock() {
		return
	}
	defer l.mu.Unlock()
	if now < l.close.Load() {
		return
	}
	l.closeWindow(now)
}

// admit says whether one ordinary unit, under the concurrency limit, is admitted
// by the run queue of a saturated process; a refusal is counted in SaturatedCount.
func (l *Limiter) admit() bool {
	if l.pass() {
		return true
	}
	l.refuseSaturated()
	return false
}

// setWaits makes src the Limiter's scheduler source, read from now on.
func (l *Limiter) setWaits(src waitSource) {
	l.waits = src
	l.waitN, l.waitSum = src()
	l.cpu, _ = l.cpuTime()
	if l.waitedTime != nil {
		l.waited = l.waitedTime()
	}
}

// windowWaits reads the scheduler's samples since the last window closed: how many
// and their mean wait in seconds. Called with mu held.
func (l *Limiter) windowWaits() (uint64, float64) {
	n, sum := l.waits()
	dn, dsum := n-l.waitN, sum-l.waitSum
	l.waitN, l.waitSum = n, sum
	if dn == 0 {
		return 0, 0
	}
	return dn, dsum / float64(dn)
}
