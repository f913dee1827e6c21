package host

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Phase is how far a shutdown has got.
type Phase int32

const (
	// NotStarted: no stop has been requested.
	NotStarted Phase = iota
	// Started: readiness is withdrawn; the entrypoints drain and stop, and in
	// cooperative mode the Host waits for MarkApplicationDrained.
	Started
	// Cleanup: shutdown hooks run, warmup steps stop, the container closes and
	// telemetry flushes. Clients from the container must not be used after it.
	Cleanup
	// Completed: cleanup has finished, whether or not every step succeeded.
	Completed
)

func (p Phase) String() string {
	switch p {
	case NotStarted:
		return "not_started"
	case Started:
		return "started"
	case Cleanup:
		return "cleanup"
	case Completed:
		return "completed"
	}
	return fmt.Sprintf("Phase(%d)", int32(p))
}

// Result is how a shutdown ended.
type Result int32

const (
	// Success: cleanup finished before the Deadline (or there was none).
	Success Result = iota
	// Timeout: the Deadline expired before cleanup finished. It stays Timeout even
	// if cleanup later succeeds, and does not mean that every step failed.
	Timeout
)

func (r Result) String() string {
	if r == Timeout {
		return "timeout"
	}
	return "success"
}

// Shutdown is a service's shutdown handle. The Host owns it and supplies it to the
// container, so application code can start, observe or hurry the exit. Every caller
// shares one shutdown: repeated Begin calls neither restart it nor reset its Deadline.
//
// A Shutdown is safe for concurrent use. Only the Host creates one.
type Shutdown struct {
	deadline time.Duration
	onBegin  func() // called once, synchronously, by the first Begin

	mu          sync.Mutex
	begun       bool
	cooperative bool
	beganAt     time.Time
	timer       *time.Timer
	forced      bool
	drainedSet  bool
	timedOut    atomic.Bool
	phase       atomic.Int32
	began       chan struct{}
	force       chan struct{}
	drained     chan struct{}
	cleanup     chan struct{}
	done        chan struct{}
}

func newShutdown(deadline time.Duration, onBegin func()) *Shutdown {
	return &Shutdown{
		deadline: deadline,
		onBegin:  onBegin,
		began:    make(chan struct{}),
		force:    make(chan struct{}),
		drained:  make(chan struct{}),
		cleanup:  make(chan struct{}),
		done:     make(chan struct{}),
	}
}

// Begin requests a graceful stop and returns at once. It is what the first SIGTERM
// does. The Deadline, if any, starts counting at the first call; later calls do nothing.
func (s *Shutdown) Begin() { s.begin(false) }

// BeginCooperative is Begin for an application that started work of its own outside
// the entrypoints: the entrypoints drain and stop as usual, but cleanup — which closes
// the clients that work may still use — waits until MarkApplicationDrained is called,
// ForceCleanup is called, or the Deadline expires. Only the first Begin chooses the
// mode; a cooperative call after a plain Begin does not make it cooperative.
func (s *Shutdown) BeginCooperative() { s.begin(true) }

func (s *Shutdown) begin(cooperative bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.begun {
		return
	}
	s.begun = true
	s.cooperative = cooperative
	s.beganAt = time.Now()
	s.phase.CompareAndSwap(int32(NotStarted), int32(Started))
	if s.deadline > 0 {
		s.timer = time.AfterFunc(s.deadline, s.expire)
	}
	if s.onBegin != nil {
		s.onBegin()
	}
	close(s.began)
}

// expire is the Deadline firing.
func (s *Shutdown) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if Phase(s.phase.Load()) == Completed {
		return
	}
	s.timedOut.Store(true)
	s.forceLocked()
}

// MarkApplicationDrained tells a cooperative shutdown that the application's own work
// has finished, so cleanup may start once the entrypoints are stopped. It may be
// called before the shutdown begins and more than once.
func (s *Shutdown) MarkApplicationDrained() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.drainedSet {
		s.drainedSet = true
		close(s.drained)
	}
}

// ForceCleanup stops waiting for drains — the drain delay, drain phases, the
// entrypoints' Drain and a cooperative wait are cut short — and lets the Host go on to
// stop the entrypoints and clean up. It begins the shutdown if nothing has, returns at
// once and may be called repeatedly. It does not make the Result Timeout, and it does
// not stop code that is still running: that code may fail as its clients close.
func (s *Shutdown) ForceCleanup() {
	s.begin(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forceLocked()
}

func (s *Shutdown) forceLocked() {
	if !s.forced {
		s.forced = true
		close(s.force)
	}
}

// Phase reports how far the shutdown has got.
func (s *Shutdown) Phase() Phase { return Phase(s.phase.Load()) }

// Started is closed when the shutdown begins.
func (s *Shutdown) Started() <-chan struct{} { return s.began }

// CleanupStarted is closed when the Cleanup phase begins.
func (s *Shutdown) CleanupStarted() <-chan struct{} { return s.cleanup }

// Done is closed when cleanup has finished and the Phase is Completed.
func (s *Shutdown) Done() <-chan struct{} { return s.done }

// Result reports whether the shutdown beat its Deadline. Before Done is closed it
// reports how things stand so far.
func (s *Shutdown) Result() Result {
	if s.timedOut.Load() {
		return Timeout
	}
	return Success
}

// forcing is closed on ForceCleanup or Deadline expiry.
func (s *Shutdown) forcing() <-chan struct{} { return s.force }

func (s *Shutdown) isCooperative() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cooperative
}

func (s *Shutdown) startCleanup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase.CompareAndSwap(int32(Started), int32(Cleanup)) {
		close(s.cleanup)
	}
}

func (s *Shutdown) complete() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	if Phase(s.phase.Load()) != Cleanup {
		close(s.cleanup)
	}
	s.phase.Store(int32(Completed))
	close(s.done)
}
