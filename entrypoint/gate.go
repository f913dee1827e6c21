package entrypoint

import (
	"context"
	"sync"
	"sync/atomic"
)

// The Gate's whole state is one word, so that admission and counting are a single
// atomic step: an Enter either lands before Close's flag (and is counted before Close
// returns) or sees the flag (and is refused). The flags sit in the low bits, the
// count of every unit in flight above them, and the count of the units the limiter
// limits (see Admit) in the top bits, so that one atomic add admits and counts a
// limited unit too. A count that wraps below zero borrows from the field above it,
// never from the flags, and adding the unit back restores both.
const (
	gateClosed  uint64 = 1 << 0 // Close was called
	gateWaiting uint64 = 1 << 1 // a Wait is parked on zeroCh
	gateShift          = 2
	gateOne     uint64 = 1 << gateShift // one unit of the in-flight count
	countBits          = 31
	countMask   uint64 = 1<<countBits - 1
	limShift           = gateShift + countBits
	limOne      uint64 = 1 << limShift // one unit of the limited count
)

// count is the number of units in flight in state s; limited the number of them the
// limiter limits.
func count(s uint64) uint64   { return s >> gateShift & countMask }
func limited(s uint64) uint64 { return s >> limShift }

// A Gate admits work into an entrypoint and counts what is in flight, so that Drain
// can stop intake and then wait for the work already admitted.
//
// Each unit of work calls Enter; when admitted it calls the returned leave function
// once it is done. Close refuses all later Enters, and Wait blocks until nothing
// admitted is still in flight. The fast path (Enter and leave, gate open, nobody
// waiting) takes no lock and allocates nothing.
//
// Given a Limiter (SetLimiter; admission.Limiter is the framework's), the Gate
// also refuses ordinary work beyond an adaptive concurrency limit: see Admit, which
// tells a refusal for overload from one for draining. Enter is never refused for overload.
//
// The zero value is an open Gate with nothing in flight. A Gate must not be copied
// after first use.
type Gate struct {
	state atomic.Uint64          // limited<<limShift | count<<gateShift | gateWaiting | gateClosed
	leave atomic.Pointer[func()] // the one leave func handed to every Enter, made on first use
	lim   atomic.Pointer[limBox]

	mu     sync.Mutex    // guards zeroCh and clearing gateWaiting
	zeroCh chan struct{} // closed to wake every Wait parked for the current zero
}

// noLeave is what a refused Enter returns, so that callers may always defer leave.
func noLeave() {}

// Enter asks to admit one unit of work. When the Gate is open it counts the unit and
// returns ok = true with the leave function the caller must call exactly once when the
// unit is done. Once the Gate is closed it returns ok = false and a leave that does
// nothing (never nil), so `leave, ok := g.Enter(); defer leave()` is always safe.
//
// Every admitted Enter returns the same leave function: it does not know which Enter
// it belongs to. A surplus call that would take the count below zero panics; one that
// does not is indistinguishable from a legitimate leave and makes Wait return while
// work is still in flight.
//
// An Enter that races with Close is either counted before Close returns or refused.
func (g *Gate) Enter() (leave func(), ok bool) {
	if g.state.Load()&gateClosed != 0 {
		return noLeave, false
	}
	if g.state.Add(gateOne)&gateClosed != 0 {
		// Close won the race: undo our count, which may be the one a Wait is on.
		g.release(gateOne)
		return noLeave, false
	}
	if p := g.leave.Load(); p != nil {
		return *p, true
	}
	return g.leaveFunc(), true
}

// leaveFunc makes the Gate's leave func on first use; a method value allocates, so it
// is made once per Gate rather than once per Enter.
func (g *Gate) leaveFunc() func() {
	f := func() { g.release(gateOne) }
	if g.leave.CompareAndSwap(nil, &f) {
		return f
	}
	return *g.leave.Load()
}

// release takes unit (gateOne, limOne or both) off the counts and, when that empties
// a Gate someone waits on, wakes the waiters. Nobody waiting means no lock and no
// channel operation. It returns the state it left.
func (g *Gate) release(unit uint64) uint64 {
	s := g.state.Add(-unit)
	if unit&gateOne != 0 && count(s) == countMask || unit&limOne != 0 && limited(s) == countMask {
		g.surplusLeave(unit)
	}
	if count(s) == 0 && s&gateWaiting != 0 {
		g.wake()
	}
	return s
}

// surplusLeave handles a leave that wrapped a count below zero: it restores the
// counts, so the Gate stays usable after a recover and a Wait that parked on the
// wrapped count still wakes, then panics.
func (g *Gate) surplusLeave(unit uint64) {
	if s := g.state.Add(unit); count(s) == 0 && s&gateWaiting != 0 {
		g.wake()
	}
	panic("entrypoint: Gate leave called more times than Enter admitted")
}

// wake releases every Wait parked on the current zero, if the count is still zero.
// When it is not, a unit entered since the release that called us, and its own
// release will call wake again; gateWaiting stays set until then.
func (g *Gate) wake() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if count(g.state.Load()) != 0 {
		return
	}
	g.state.And(^gateWaiting)
	if g.zeroCh != nil {
		close(g.zeroCh)
		g.zeroCh = nil
	}
}

// Close refuses every later Enter. It does not wait for the work already admitted;
// Wait does. Closing a closed Gate does nothing, and a Gate cannot be reopened.
func (g *Gate) Close() {
	g.state.Or(gateClosed)
}

// Closed reports whether Close has been called.
func (g *Gate) Closed() bool {
	return g.state.Load()&gateClosed != 0
}

// InFlight reports how many admitted units have not left yet. It may briefly count an
// Enter that is in the middle of being refused by a concurrent Close.
func (g *Gate) InFlight() int {
	return int(count(g.state.Load()))
}

// Wait blocks until nothing is in flight and returns nil; when nothing is in flight
// already it returns at once. If ctx is done first it returns ctx.Err(), and the work
// still in flight is left alone.
//
// Wait does not close the Gate: on an open Gate it returns at a moment when the count
// was zero, and new work may have entered by the time the caller looks. Drain
// normally calls Close and then Wait. Wait does not poll; the leave that empties the
// Gate wakes it. Any number of goroutines may Wait at once.
func (g *Gate) Wait(ctx context.Context) error {
	if count(g.state.Load()) == 0 {
		return nil
	}
	g.mu.Lock()
	// Setting the flag and reading the count in one step means that the release which
	// later empties the Gate is sure to see the flag and call wake.
	if count(g.state.Or(gateWaiting)) == 0 {
		if g.zeroCh == nil {
			g.state.And(^gateWaiting) // nobody else parked; keep release's fast path
		}
		g.mu.Unlock()
		return nil
	}
	if g.zeroCh == nil {
		g.zeroCh = make(chan struct{})
	}
	ch := g.zeroCh
	g.mu.Unlock()

	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
