package host

import (
	"sync/atomic"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/health"
)

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

// entry is one registered entrypoint, what it can do and its state.
type entry struct {
	reg   Registration
	name  string
	caps  caps
	state atomic.Int32
}

// caps is what an entrypoint can do beyond the four methods: entrypoint's table,
// and the two interfaces that live beside the types they take or return. The Host
// probes each entrypoint once, when it adopts it (probe), and reads only this.
type caps struct {
	entrypoint.Caps
	monitor    health.MonitorUser // follows readiness in its transport
	leadership Campaigner         // campaigns for leases
}

// probe returns what e can do.
func probe(e entrypoint.Entrypoint) caps {
	c := caps{Caps: entrypoint.Capabilities(e)}
	c.monitor, _ = e.(health.MonitorUser)
	c.leadership, _ = e.(Campaigner)
	return c
}

func (e *entry) set(s entryState) { e.state.Store(int32(s)) }
func (e *entry) get() entryState  { return entryState(e.state.Load()) }
