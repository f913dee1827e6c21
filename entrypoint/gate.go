package entrypoint

import (
	"context"
	"sync"
	"sync/atomic"
)

// The Gate's whole state is one word, so that admission and counting are a single
// atomic step: an Enter either lands before Close's flag (and is counted before Close
// returns) or sees the flag (and is refused). The flags sit in the low bits and the
// count above them, so a count that wraps below zero never touches the flags.
const (
	gateClosed  uint64 = 1 << 0 // Close was called
	gateWaiting uint64 = 1 << 1 // a Wait is parked on zeroCh
	gateShift          = 2
	gateOne     uint64 = 1 << gateShift // one unit of the in-flight count
)

// A Gate admits work into an entrypoint and counts what is in flight, so that Drain
// can stop intake and then wait for the work already admitted.
//
// Each unit of work calls Enter; when admitted it calls the returned leave function
// once it is done. Close refuses all later Enters, and Wait blocks until nothing
// admitted is still in flight. The fast path (Enter and leave, gate open, nobody
// waiting) takes no lock and allocates nothing.
//
// The zero value is an open Gate with nothing in flight. A Gate must not be copied
// after first use.
type Gate struct {
	state atomic.Uint64          // count<<gateShift | gateWaiting | gateClosed
	leave atomic.Pointer[func()] // the one leave func handed to every Enter, made on first use

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
		g.release()
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
	f := g.release
	if g.leave.CompareAndSwap(nil, &f) {
		return f
	}
	return *g.leave.Load()
}

// release takes one unit off the count and, when that empties a Gate someone waits
// on, wakes the waiters. Nobody waiting means no lock and no channel operation.
func (g *Gate) release() {
	s := g.state.Add(^(gateOne - 1)) // minus one unit
	if s>>gateShift == ^uint64(0)>>gateShift {
		g.surplusLeave()
	}
	if s>>gateShift == 0 && s&gateWaiting != 0 {
		g.wake()
	}
}

// surplusLeave handles a leave that wrapped the count below zero: it restores the
// count, so the Gate stays usable after a recover and a Wait that parked on the
// wrapped count still wakes, then panics.
func (g *Gate) surplusLeave() {
	if s := g.state.Add(gateOne); s>>gateShift == 0 && s&gateWaiting != 0 {
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
	if g.state.Load()>>gateShift != 0 {
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
	return int(g.state.Load() >> gateShift)
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
	if g.state.Load()>>gateShift == 0 {
		return nil
	}
	g.mu.Lock()
	// Setting the flag and reading the count in one step means that the release which
	// later empties the Gate is sure to see the flag and call wake.
	if g.state.Or(gateWaiting)>>gateShift == 0 {
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
