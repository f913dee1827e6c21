package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// progress is how far a shutdown has got, for /debug/lifecycle's "shutdown". A
// program reads the same from Started, CleanupStarted and Done.
type progress int32

const (
	// progressNotStarted: no stop has been requested.
	progressNotStarted progress = iota
	// progressStarted: readiness is withdrawn; the entrypoints drain and stop, and in
	// cooperative mode the Host waits for MarkApplicationDrained.
	progressStarted
	// progressCleanup: shutdown hooks run, warmup steps stop, the container closes and
	// telemetry flushes. Clients from the container must not be used after it.
	progressCleanup
	// progressCompleted: cleanup has finished, whether or not every step succeeded.
	progressCompleted
)

func (p progress) String() string {
	switch p {
	case progressNotStarted:
		return "not_started"
	case progressStarted:
		return "started"
	case progressCleanup:
		return "cleanup"
	case progressCompleted:
		return "completed"
	}
	return fmt.Sprintf("progress(%d)", int32(p))
}

// Result is how a shutdown ended: success, timeout, failure or interrupted. Its
// String is the `result` of the shutdown report and the label of
// servicewright_shutdowns_total.
type Result int32

const (
	// ResultSuccess: every step of the exit finished, on time, without error.
	ResultSuccess Result = iota
	// ResultTimeout: the Deadline expired, or a step overran its budget (a drain past its
	// window, a step past StepTimeout, a cooperative wait past the drain window).
	// Once the Deadline has expired it stays ResultTimeout unless a failure is found. A
	// telemetry flush that cannot deliver is not one (the report counts it apart),
	// nor is a post_shutdown hook, which runs after the result is settled.
	ResultTimeout
	// ResultFailure: the shutdown was caused by a failure (startup, an essential
	// entrypoint), or a cleanup step failed (a shutdown hook, a warmup Stop,
	// closing the container). It wins over ResultTimeout.
	ResultFailure
	// ResultInterrupted: a stop arrived before every task (entrypoint.Task) was done.
	// The exit is orderly but the work is not finished: Run's error wraps
	// fault.ErrInterrupted and the process exits ExitInterrupted, never 0.
	ResultInterrupted
)

func (r Result) String() string {
	switch r {
	case ResultTimeout:
		return "timeout"
	case ResultFailure:
		return "failure"
	case ResultInterrupted:
		return "interrupted"
	}
	return "success"
}

// ExitCode is the process exit code of a shutdown that ended with r: ExitOK for
// ResultSuccess, ExitInterrupted for ResultInterrupted, ExitFailure for the others.
// It is what Main exits with, except where Run's error carries a code of its own (a
// task's permanent failure, a ConfigError: ExitCode(err) is exact for those).
func (r Result) ExitCode() int {
	switch r {
	case ResultSuccess:
		return ExitOK
	case ResultInterrupted:
		return ExitInterrupted
	}
	return ExitFailure
}

// ErrNotBegun is returned by Shutdown.Completed when no stop has been requested:
// waiting for the end of a shutdown nobody began would wait for the next signal.
var ErrNotBegun = errors.New("host: shutdown not begun")

// errStopRequested is the context.Cause of the stop signal when Begin,
// BeginCooperative or ForceCleanup started the shutdown.
var errStopRequested = errors.New("host: stop requested")

// Shutdown is a service's shutdown handle. The Host owns it and supplies it to the
// container, so application code can start, observe or hurry the exit. Every caller
// shares one shutdown: repeated Begin calls neither restart it nor reset its Deadline.
//
// A Shutdown is safe for concurrent use. Only the Host creates one.
type Shutdown struct {
	deadline time.Duration

	// stop is the one stop signal: cancelled, synchronously, by the first Begin.
	stop       context.Context
	cancelStop context.CancelCauseFunc
	// force is cancelled by ForceCleanup or by the Deadline: the waits of the
	// drain end early.
	force       context.Context
	cancelForce context.CancelCauseFunc

	mu          sync.Mutex
	cooperative bool
	timer       *time.Timer
	drainedSet  bool
	timedOut    atomic.Bool
	result      atomic.Int32 // the verdict so far; final once settled
	settled     atomic.Bool
	phase       atomic.Int32
	drained     chan struct{}
	cleanup     chan struct{}
	done        chan struct{}
}

func newShutdown(deadline time.Duration) *Shutdown {
	s := &Shutdown{
		deadline: deadline,
		drained:  make(chan struct{}),
		cleanup:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.stop, s.cancelStop = context.WithCancelCause(context.Background())
	s.force, s.cancelForce = context.WithCancelCause(context.Background())
	return s
}

// Begin requests a graceful stop and returns at once. It is what the first SIGTERM
// does. The Deadline, if any, starts counting at the first call; later calls do nothing.
func (s *Shutdown) Begin() { s.begin(false, errStopRequested) }

// BeginCooperative is Begin for an application that started work of its own outside
// the entrypoints: the entrypoints drain and stop as usual, but cleanup — which closes
// the clients that work may still use — waits until MarkApplicationDrained is called,
// ForceCleanup is called, the Deadline expires, or the drain window (DrainGrace from
// the start of the drain) ends, whichever comes first. A wait that the window ends
// makes Result return ResultTimeout, as does the Deadline; one that ForceCleanup ends
// does not (ForceCleanup never makes the result a timeout). Only the first Begin
// chooses the mode; a cooperative call after a plain Begin does not make it
// cooperative.
func (s *Shutdown) BeginCooperative() { s.begin(true, errStopRequested) }

// begin cancels the stop signal with cause; the first call decides the mode.
func (s *Shutdown) begin(cooperative bool, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop.Err() != nil {
		return
	}
	s.cooperative = cooperative
	s.phase.CompareAndSwap(int32(progressNotStarted), int32(progressStarted))
	if s.deadline > 0 {
		s.timer = time.AfterFunc(s.deadline, s.expire)
	}
	s.cancelStop(cause)
}

// expire is the Deadline firing.
func (s *Shutdown) expire() {
	if progress(s.phase.Load()) == progressCompleted {
		return
	}
	s.timedOut.Store(true)
	s.cancelForce(fmt.Errorf("%w: the %s deadline expired", ErrShutdownTimeout, s.deadline))
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

// ForceCleanup stops waiting for drains — the drain delay, drain hooks, the
// entrypoints' Drain and a cooperative wait are cut short — and lets the Host go on to
// stop the entrypoints and clean up. It begins the shutdown if nothing has, returns at
// once and may be called repeatedly. It does not make Result return ResultTimeout, in
// either mode: a cooperative wait it cuts short is not an overrun. (A step that hangs
// past its own limit still is, whoever cut the waits.) It does not stop code that is
// still running: that code may fail as its clients close.
func (s *Shutdown) ForceCleanup() {
	s.begin(false, errStopRequested)
	s.cancelForce(errors.New("ForceCleanup called"))
}

// progress reports how far the shutdown has got.
func (s *Shutdown) progress() progress { return progress(s.phase.Load()) }

// Started is closed when the shutdown begins.
//
// Like ctx.Done, the channel is there to select on, and before a stop is requested it
// is simply open: a receive from it before Begin waits for the stop (SIGTERM, the
// Run ctx, a failure) however long that takes. Select on it beside a ctx of your own to
// bound the wait, or use Completed, which refuses at once to wait for a shutdown not
// begun.
func (s *Shutdown) Started() <-chan struct{} { return s.stop.Done() }

// CleanupStarted is closed when the Cleanup phase begins. Before a stop it is open,
// as Started is.
func (s *Shutdown) CleanupStarted() <-chan struct{} { return s.cleanup }

// Done is closed when cleanup has finished (the shutdown is complete). Before a
// stop it is open, as Started is.
func (s *Shutdown) Done() <-chan struct{} { return s.done }

// Completed waits for the shutdown to finish and returns its Result, or returns at
// once with ErrNotBegun when no stop has been requested yet (call Begin, or
// BeginCooperative and then MarkApplicationDrained, first). When ctx ends first it
// returns the verdict so far and ctx's cause; the shutdown goes on.
func (s *Shutdown) Completed(ctx context.Context) (Result, error) {
	if s.stop.Err() == nil {
		return ResultSuccess, ErrNotBegun
	}
	select {
	case <-s.done:
		return s.Result(), nil
	case <-ctx.Done():
		return s.Result(), context.Cause(ctx)
	}
}

// Result reports how the shutdown ended — ResultSuccess, ResultTimeout, ResultFailure or ResultInterrupted —
// the same word as the report's `result`.
//
// It is final before the post_shutdown hooks run: a post_shutdown hook (a final
// report of its own) reads the verdict the report will carry, and nothing after it
// — a post_shutdown hook failing or overrunning, the probe listener closing — changes
// it (those are reported beside the result, see the report's after_result). Before
// that it is the verdict so far, and only ever gets worse: ResultFailure as soon as a
// failure caused the shutdown or a cleanup step failed, ResultInterrupted when a task was
// cut, ResultTimeout once the Deadline has expired or a step overran; ResultSuccess otherwise.
func (s *Shutdown) Result() Result {
	r := Result(s.result.Load())
	if !s.settled.Load() && s.timedOut.Load() && rank(r) < rank(ResultTimeout) {
		return ResultTimeout
	}
	return r
}

// rank orders the verdicts as the Host decides between them: the cause of the
// shutdown (ResultInterrupted, ResultFailure) first, then a failed cleanup step, then a timeout.
func rank(r Result) int {
	switch r {
	case ResultTimeout:
		return 1
	case ResultFailure:
		return 2
	case ResultInterrupted:
		return 3
	}
	return 0
}

// worsen moves the verdict so far to r when r ranks above it; once settled it does
// nothing.
func (s *Shutdown) worsen(r Result) {
	for !s.settled.Load() {
		old := s.result.Load()
		if rank(r) <= rank(Result(old)) || s.result.CompareAndSwap(old, int32(r)) {
			return
		}
	}
}

// settle makes r the final Result, before the post_shutdown hooks run.
func (s *Shutdown) settle(r Result) {
	s.result.Store(int32(r))
	s.settled.Store(true)
}

// stopping is the stop signal: done once a shutdown has begun.
func (s *Shutdown) stopping() context.Context { return s.stop }

// forcing is done on ForceCleanup or Deadline expiry.
func (s *Shutdown) forcing() context.Context { return s.force }

func (s *Shutdown) isCooperative() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cooperative
}

func (s *Shutdown) startCleanup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase.CompareAndSwap(int32(progressStarted), int32(progressCleanup)) {
		close(s.cleanup)
	}
}

// complete closes Done; the result was settled before.
func (s *Shutdown) complete() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	if progress(s.phase.Load()) != progressCleanup {
		close(s.cleanup)
	}
	s.phase.Store(int32(progressCompleted))
	close(s.done)
}
