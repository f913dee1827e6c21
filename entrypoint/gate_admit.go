package entrypoint

import "reflect"

// A Class says how the Gate's limiter treats a unit of work (see Gate.Admit).
type Class uint8

const (
	// Ordinary work counts against the limit and is refused once the limit is
	// reached; a sample of its latency drives the limit.
	Ordinary Class = iota
	// Critical work counts against the limit, and its latency drives it, but it is
	// never refused for overload: declare so the routes whose refusal costs more
	// than their load (a payment's confirmation, a lease renewal).
	Critical
	// Exempt work is outside the limiter: it is neither limited nor counted against
	// the limit, and its latency is not sampled. Streams, long polls and hijacked
	// connections are exempt, since how long they last says nothing of load.
	Exempt
)

// A Verdict is the Gate's answer to Admit.
type Verdict uint8

const (
	Admitted   Verdict = iota // counted; call the Ticket's Leave when done
	Draining                  // refused: the Gate is closed
	Overloaded                // refused: the limiter's limit is reached
)

func (v Verdict) String() string {
	switch v {
	case Admitted:
		return "admitted"
	case Draining:
		return "draining"
	case Overloaded:
		return "overload"
	}
	return "unknown"
}

// A Limiter keeps the adaptive concurrency limit a Gate admits ordinary work under
// (SetLimiter, AdmitTo); admission.Limiter is the framework's. The Gate calls
// Acquire when it admits a unit that counts against the limit and Finish when the
// unit leaves; a class's Limiter, whose units the Gate does not count, counts them
// itself (Hold, Release). Limit, ShedCount, SaturatedCount and Share are what an
// entrypoint reports of it (its metrics, AdmissionLimit, ShedOverload).
//
// Every method is called on the hot path of every request, from many goroutines at
// once: an implementation must not block.
type Limiter interface {
	// Acquire decides on one unit counted against the limit, with inFlight such
	// units in flight, itself included. A unit that may be refused (refusable: of
	// class Ordinary) is refused with ok = false when inFlight exceeds the limit or
	// the process is saturated; one that may not is always admitted. An admitted
	// unit's start is handed to Finish: 0 for a unit whose latency is not sampled.
	Acquire(inFlight int, refusable bool) (start int64, ok bool)
	// Finish is called when a unit admitted with start is done, with inFlight
	// units counted against the limit in flight, itself included.
	Finish(start int64, inFlight int)
	// Hold counts one unit in flight against a class's Limiter and returns the
	// count, itself included; Release takes it off and returns the count left.
	Hold() int
	Release() int

	Limit() int             // how many ordinary units may be in flight at once
	ShedCount() uint64      // units refused for the limit
	SaturatedCount() uint64 // units refused because the process was saturated
	Share() float64         // the share of ordinary units under the limit admitted lately
}

// limiterOrNil is lim, or nil when lim holds a nil pointer (a nil
// *admission.Limiter: admission off), so that the Gate tests one thing.
func limiterOrNil(lim Limiter) Limiter {
	if lim == nil {
		return nil
	}
	if v := reflect.ValueOf(lim); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return lim
}

// limBox holds a Limiter, so that the Gate can swap it atomically.
type limBox struct{ Limiter }

// A Ticket is one admitted unit of work. Its zero value, what a refused Admit
// returns, has a Leave that does nothing.
type Ticket struct {
	g     *Gate
	lim   Limiter // nil unless the unit counts against the limit
	start int64   // the limiter's sample start; 0 when not sampled
	unit  uint64  // what Leave takes off the Gate's counts
	held  bool    // lim is a class's, counting the unit itself (AdmitTo)
}

// Leave marks the unit done, exactly once, and feeds its latency to the limiter when
// it was sampled. Calling Leave twice on an admitted Ticket panics or, when other
// work is in flight, makes Wait return early (see Enter).
func (t Ticket) Leave() {
	if t.unit == 0 {
		return
	}
	s := t.g.release(t.unit)
	switch {
	case t.held:
		t.lim.Finish(t.start, t.lim.Release()+1)
	case t.lim != nil:
		t.lim.Finish(t.start, int(limited(s))+1)
	}
}

// Detach takes the unit out of the limiter at once, without a sample, and returns
// the function that ends its count in the Gate, for work that outlives its request
// (a hijacked connection): Drain still waits for it, the limit no longer counts it.
// Neither Leave nor Detach may be called on the Ticket afterwards.
func (t Ticket) Detach() (leave func()) {
	switch {
	case t.unit == 0:
		return noLeave
	case t.unit&limOne != 0:
		t.g.release(limOne)
	case t.held:
		t.lim.Release()
	}
	if p := t.g.leave.Load(); p != nil {
		return *p
	}
	return t.g.leaveFunc()
}

// SetLimiter makes the Gate refuse Ordinary work beyond lim's limit (see Admit). A
// nil lim, or a nil pointer in it (a nil *admission.Limiter: admission off), the
// zero Gate's, limits nothing. It may be called at any time; units admitted before
// it keep the limiter they were admitted under.
func (g *Gate) SetLimiter(lim Limiter) {
	if lim = limiterOrNil(lim); lim == nil {
		g.lim.Store(nil)
		return
	}
	g.lim.Store(&limBox{lim})
}

// Limiter returns what SetLimiter set, or nil (never a nil pointer in a Limiter).
func (g *Gate) Limiter() Limiter {
	if b := g.lim.Load(); b != nil {
		return b.Limiter
	}
	return nil
}

// Admit asks to admit one unit of work of class c. It returns Draining once the Gate
// is closed, Overloaded when c is Ordinary and the limiter refuses it (its limit of
// units in flight is reached, or the process is saturated and the scheduler's run
// queue is long), and otherwise Admitted with the Ticket whose Leave the caller
// must call when the unit is done. A refused Admit returns the zero Ticket, so that
// `t, v := g.Admit(c); defer t.Leave()` is always safe.
//
// Admission and counting are one atomic add, as in Enter; with a limiter, an
// admitted unit of class Ordinary or Critical also counts against the limit, and
// one in sixteen reads the clock to feed the limiter a latency sample. Admit never
// queues and never blocks: a refusal costs what an admission does. It does not
// refuse the work of Enter (counted as Exempt), nor Critical or Exempt work for
// overload.
func (g *Gate) Admit(c Class) (Ticket, Verdict) {
	if g.state.Load()&gateClosed != 0 {
		return Ticket{}, Draining
	}
	box := g.lim.Load()
	unit := gateOne
	if box != nil && c != Exempt {
		unit |= limOne
	}
	s := g.state.Add(unit)
	switch {
	case s&gateClosed != 0:
		g.release(unit) // Close won the race; see Enter
		return Ticket{}, Draining
	case unit == gateOne:
		return Ticket{g: g, unit: unit}, Admitted
	}
	start, ok := box.Acquire(int(limited(s)), c == Ordinary)
	if !ok {
		g.release(unit)
		return Ticket{}, Overloaded
	}
	return Ticket{g: g, lim: box.Limiter, unit: unit, start: start}, Admitted
}

// AdmitTo is Admit for a unit of a class of routes whose limiter is lim, one from
// the Gate's own Limiter's NewClass: the unit counts against lim's limit (lim
// counts its own units: Hold, Release) and its latency drives lim, so that routes
// of different cost do not shed each other. Drain still counts and waits for it.
// A nil lim (or a nil pointer in it), or the Gate's own, is Admit; so is an
// Exempt unit.
func (g *Gate) AdmitTo(lim Limiter, c Class) (Ticket, Verdict) {
	if c == Exempt || limiterOrNil(lim) == nil || lim == g.Limiter() {
		return g.Admit(c)
	}
	if g.state.Load()&gateClosed != 0 {
		return Ticket{}, Draining
	}
	if g.state.Add(gateOne)&gateClosed != 0 {
		g.release(gateOne) // Close won the race; see Enter
		return Ticket{}, Draining
	}
	start, ok := lim.Acquire(lim.Hold(), c == Ordinary)
	if !ok {
		lim.Release()
		g.release(gateOne)
		return Ticket{}, Overloaded
	}
	return Ticket{g: g, lim: lim, unit: gateOne, held: true, start: start}, Admitted
}
