package entrypoint

import (
	"errors"
	"fmt"
)

// ErrOutOfTurn is what an entrypoint method called out of the Host's order returns,
// wrapped in an error naming the entrypoint, the method and the phase it found:
//
//	entrypoint "http": Serve called while new: called out of turn
var ErrOutOfTurn = errors.New("called out of turn")

// Guard is an entrypoint's Phase together with the Host's call-order rules, so every
// entrypoint refuses a call out of turn the same way and with the same error. It
// holds no lock of its own: keep it under the lock that guards what its transitions
// decide (the listener, the loop's channels), so that a transition and its effect
// are one step. The zero Guard is in PhaseNew with an empty name; make one with
// NewGuard.
//
// The rules, one method per Entrypoint method:
//   - Bind is allowed only when new; the caller marks success with Bound.
//   - Serve moves bound to serving; after Drain or Stop it starts nothing and is not
//     an error; when new or already serving it is out of turn.
//   - Drain moves bound or serving to draining.
//   - Stop moves any phase but new to stopped.
//
// Drain and Stop are never out of turn: the Host calls them on every entrypoint it
// bound, whatever happened before, and each reports the phase it found so the caller
// knows what there is to undo. Before Bind there is nothing to undo, and both leave
// the phase new.
type Guard struct {
	name  string
	phase Phase
}

// NewGuard returns a Guard in PhaseNew for the entrypoint called name.
func NewGuard(name string) Guard { return Guard{name: name} }

// Phase returns the current phase.
func (g *Guard) Phase() Phase { return g.phase }

// Bind returns nil when the entrypoint is new, and an ErrOutOfTurn error otherwise.
// It does not move: call Bound once Bind succeeded, so that a failed Bind may be
// retried.
func (g *Guard) Bind() error {
	if g.phase != PhaseNew {
		return g.OutOfTurn("Bind")
	}
	return nil
}

// Bound records a successful Bind: new moves to bound. Any other phase is kept.
func (g *Guard) Bound() {
	if g.phase == PhaseNew {
		g.phase = PhaseBound
	}
}

// Serve moves bound to serving and reports start = true. After Drain or Stop it
// reports start = false and no error: there is nothing to serve. When new or
// already serving it returns an ErrOutOfTurn error.
func (g *Guard) Serve() (start bool, err error) {
	switch g.phase {
	case PhaseBound:
		g.phase = PhaseServing
		return true, nil
	case PhaseDraining, PhaseStopped:
		return false, nil
	}
	return false, g.OutOfTurn("Serve")
}

// Drain moves bound or serving to draining and returns the phase it found.
func (g *Guard) Drain() (prev Phase) {
	prev = g.phase
	if prev == PhaseBound || prev == PhaseServing {
		g.phase = PhaseDraining
	}
	return prev
}

// Stop moves any phase but new to stopped and returns the phase it found.
func (g *Guard) Stop() (prev Phase) {
	prev = g.phase
	if prev != PhaseNew {
		g.phase = PhaseStopped
	}
	return prev
}

// OutOfTurn returns the error for method called in the current phase, wrapping
// ErrOutOfTurn.
func (g *Guard) OutOfTurn(method string) error {
	return fmt.Errorf("entrypoint %q: %s called while %s: %w", g.name, method, g.phase, ErrOutOfTurn)
}
