package entrypoint

import (
	"errors"
	"fmt"
	"sync"
)

// ErrOutOfTurn is what an entrypoint method called out of the Host's order returns,
// wrapped in an error naming the entrypoint, the method and the phase it found:
//
//	entrypoint "http": Serve called while new: entrypoint: called out of turn
var ErrOutOfTurn = errors.New("entrypoint: called out of turn")

// Base is the part of an entrypoint that the Host's rules fix, written once: the
// name, the call-order guard and the lock it lives under, the rules that make Drain
// and Stop do nothing when there is nothing to undo, and the telemetry the Host
// hands over. Every entrypoint of the module holds one; Runner is a Base plus the
// goroutine that runs a Work function, and is what a hand-written entrypoint embeds.
//
// An entrypoint holds its Base as a field and keeps under the Base's lock whatever
// its transitions decide (the listener, the serving goroutine's done channel), so
// that a transition and its effect are one step:
//
//	s.base.Lock()
//	turn := s.base.Drain()
//	done := s.done
//	s.base.Unlock()
//	switch turn {
//	case entrypoint.Idle:
//		return nil // before Bind, or drained or stopped already
//	case entrypoint.Unserved:
//		return s.closeListener() // bound, but Serve never started
//	}
//	... // drain what Serve started
//
// The transitions — Bind, Bound, Serve, Drain, Stop — are called with the lock held
// and do no work of their own: they move the phase and say what there is to do. The
// zero Base is not usable; call Init.
type Base struct {
	mu     sync.Mutex
	name   string
	phase  phase
	served bool // Serve started the work once: Drain and Stop have it to end

	given Telemetry               // what the entrypoint's options gave
	use   func(t Telemetry) error // takes the merged telemetry; nil: none to take
}

// Turn is what a Drain or Stop call finds to do, decided from the phase and from
// whether Serve ever started.
type Turn int

const (
	// Idle: nothing to undo. Before Bind, or after the same call (or, for Drain, a
	// Stop) already ran.
	Idle Turn = iota
	// Unserved: Bind took resources that Serve never used; release them (close the
	// listener, leave the group) and report nothing in flight.
	Unserved
	// Served: Serve started the work; drain it, or cut it.
	Served
)

func (t Turn) String() string {
	switch t {
	case Idle:
		return "idle"
	case Unserved:
		return "unserved"
	case Served:
		return "served"
	}
	return fmt.Sprintf("Turn(%d)", int(t))
}

// Init names the Base, keeps given — the telemetry the entrypoint's options gave —
// and calls use with it, so that an entrypoint built outside a Host has what it was
// given. use, if not nil, is called again by SetDefaults with given merged with the
// Host's; it must accept being called twice and say what it could not take. Init is
// called once, by the entrypoint's constructor, before anything else; it returns
// use's error.
func (b *Base) Init(name string, given Telemetry, use func(t Telemetry) error) error {
	b.name, b.given, b.use = name, given, use
	if use == nil {
		return nil
	}
	return use(given)
}

// Name returns the name Init gave.
func (b *Base) Name() string { return b.name }

// Lock takes the lock that guards the phase and whatever the entrypoint's
// transitions decide.
func (b *Base) Lock() { b.mu.Lock() }

// Unlock releases the lock Lock took.
func (b *Base) Unlock() { b.mu.Unlock() }

// SetDefaults takes the Host's telemetry for what the entrypoint's options did not
// give (Telemetry.Or) and hands the merge to the function given to Init. It does
// nothing once the entrypoint is bound: what serves keeps what it started with. It
// returns what that function could not take, such as a metrics registration that
// clashes; the Host then refuses the entrypoint with a *fault.ConfigError. It takes
// the lock itself.
func (b *Base) SetDefaults(host Telemetry) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.phase != phaseNew || b.use == nil {
		return nil
	}
	return b.use(b.given.Or(host))
}

// Unbound reports whether no Bind has succeeded yet (Bound was never called): what
// configures the entrypoint from outside, as SetDefaults does, is taken only then.
// The lock must be held, or the answer may be stale by the time it is used.
func (b *Base) Unbound() bool { return b.phase == phaseNew }

// Serving reports whether Serve started the work and neither Drain, Stop nor Rearm
// ran since: the work is taking intake. The lock must be held, or the answer may be
// stale by the time it is used.
func (b *Base) Serving() bool { return b.phase == phaseServing }

// Bind returns nil when the entrypoint is new, and an ErrOutOfTurn error otherwise.
// It does not move: call Bound once Bind succeeded, so that a failed Bind may be
// tried again. The lock must be held.
func (b *Base) Bind() error {
	if b.phase != phaseNew {
		return b.OutOfTurn("Bind")
	}
	return nil
}

// Bound records a successful Bind: new moves to bound. The lock must be held.
func (b *Base) Bound() {
	if b.phase == phaseNew {
		b.phase = phaseBound
	}
}

// Serve moves bound to serving and reports start = true: the caller starts its work
// before it releases the lock. After Drain or Stop it reports start = false and no
// error: there is nothing to serve. When new or already serving it returns an
// ErrOutOfTurn error. The lock must be held.
func (b *Base) Serve() (start bool, err error) {
	switch b.phase {
	case phaseBound:
		b.phase, b.served = phaseServing, true
		return true, nil
	case phaseDraining, phaseStopped:
		return false, nil
	}
	return false, b.OutOfTurn("Serve")
}

// Rearm moves serving back to bound after the work failed on its own, so that
// Serve may start it again: how the Host restarts a failed non-essential
// entrypoint. Any other phase is kept: after Drain or Stop there is nothing to
// restart. The lock must be held.
func (b *Base) Rearm() {
	if b.phase == phaseServing {
		b.phase = phaseBound
	}
}

// Drain moves bound or serving to draining and says what there is to do: Served
// when Serve started the work and neither Drain nor Stop ran before, Unserved when
// the entrypoint is bound but Serve never started, Idle otherwise. Drain is never
// out of turn. The lock must be held.
func (b *Base) Drain() Turn {
	switch b.phase {
	case phaseBound, phaseServing:
		b.phase = phaseDraining
		if b.served {
			return Served
		}
		return Unserved
	}
	return Idle
}

// Stop moves any phase but new to stopped and says what there is to do: Served
// when Serve started the work (drained or not), Unserved when the entrypoint is
// bound but Serve never started, Idle before Bind and after a first Stop. Stop is
// never out of turn. The lock must be held.
func (b *Base) Stop() Turn {
	switch b.phase {
	case phaseNew, phaseStopped:
		return Idle
	}
	b.phase = phaseStopped
	if b.served {
		return Served
	}
	return Unserved
}

// OutOfTurn returns the error for method called in the current phase, wrapping
// ErrOutOfTurn:
//
//	entrypoint "http": Serve called while new: entrypoint: called out of turn
func (b *Base) OutOfTurn(method string) error {
	return fmt.Errorf("entrypoint %q: %s called while %s: %w", b.name, method, b.phase, ErrOutOfTurn)
}
