package host

import "sync/atomic"

// entryState is where one entrypoint stands, for /debug/lifecycle.
type entryState int32

const (
	entryRegistered entryState = iota
	entryBound
	entryServing
	entryDraining
	entryStopped
	entryFailed
	entryFinished // a task whose work is done
)

var entryStateNames = [...]string{"registered", "bound", "serving", "draining", "stopped", "failed", "finished"}

func (s entryState) String() string { return entryStateNames[s] }

// entry is one registered entrypoint and its state.
type entry struct {
	reg   Registration
	name  string
	state atomic.Int32
}

func (e *entry) set(s entryState) { e.state.Store(int32(s)) }
func (e *entry) get() entryState  { return entryState(e.state.Load()) }
