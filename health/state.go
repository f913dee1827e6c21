package health

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Status is where a process stands for a load balancer.
type Status int32

const (
	// StatusUnavailable: not yet ready to take work (starting, or startup failed). The zero value.
	StatusUnavailable Status = iota
	// StatusReady: every client is open and the entrypoints are bound.
	StatusReady
	// StatusDraining: shutting down, or announced as leaving; still alive, not to be routed to.
	StatusDraining
)

func (s Status) String() string {
	switch s {
	case StatusUnavailable:
		return "unavailable"
	case StatusReady:
		return "ready"
	case StatusDraining:
		return "draining"
	}
	return fmt.Sprintf("Status(%d)", int32(s))
}

// State holds a process's Status. The Host drives it: Unavailable until startup has
// bound every entrypoint, Ready until shutdown begins or BeginDraining is called,
// StatusDraining from then on. StatusDraining is final: once set, Set(StatusReady) does nothing.
//
// The zero value is Unavailable and ready to use; a State is safe for concurrent use.
type State struct {
	v       atomic.Int32
	started atomic.Bool // has ever been Ready

	mu      sync.Mutex
	changed chan struct{} // closed at the next change of v; nil until Changed is called
}

// Status returns the current status.
func (s *State) Status() Status { return Status(s.v.Load()) }

// Set moves the state to st, unless it is already Draining.
func (s *State) Set(st Status) {
	for {
		cur := s.v.Load()
		if Status(cur) == StatusDraining {
			return
		}
		if s.v.CompareAndSwap(cur, int32(st)) {
			if st == StatusReady {
				s.started.Store(true)
			}
			if cur != int32(st) {
				s.notify()
			}
			return
		}
	}
}

// Started reports whether the state has ever been Ready. It stays true through the
// drain, and after a return to Unavailable; the startup probe answers from it.
func (s *State) Started() bool { return s.started.Load() }

// Changed returns a channel that is closed at the next change of Status, so that a
// transport can follow readiness without polling. Take the channel before reading
// Status: a change that lands between the two then still closes it.
func (s *State) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// notify wakes everyone waiting on Changed.
func (s *State) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}
