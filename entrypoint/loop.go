package entrypoint

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// Backoff defaults for a unit that fails or panics.
const (
	DefaultBackoffInitial = 100 * time.Millisecond
	DefaultBackoffMax     = 30 * time.Second
)

var _ interface {
	Entrypoint
	InFlighter
} = (*LoopRunner)(nil)

// LoopRunner is background work run as an entrypoint: a relay, a poller, a sweeper. It
// runs a unit of work over and over, one at a time, waiting between units, and stops
// only between units when drained. Make one with Loop.
type LoopRunner struct {
	name          string
	what          string // names the unit in a *fault.PanicError
	unit          func(context.Context) error
	every, jitter time.Duration
	cfg           loopConfig

	running    atomic.Int32 // 1 while a unit runs
	runs       atomic.Uint64
	failures   atomic.Uint64
	failStreak atomic.Uint64

	mu     sync.Mutex
	served bool               // Serve was called
	closed bool               // Drain or Stop was called; the loop must not start
	quit   chan struct{}      // closed to stop the loop between units
	cancel context.CancelFunc // cancels the units' ctx
	done   chan struct{}      // closed when the loop goroutine has exited
}

type loopConfig struct {
	log         *zap.Logger
	backoffInit time.Duration
	backoffMax  time.Duration
	startDelay  time.Duration
	unitTimeout time.Duration
	problems    fault.Problems // option misuse, reported by Bind
}

// A LoopOption configures a LoopRunner.
type LoopOption func(*loopConfig)

// WithLogger sets the logger unit failures are reported to. The default discards them.
func WithLogger(l *zap.Logger) LoopOption {
	return func(c *loopConfig) {
		if l != nil {
			c.log = l
		}
	}
}

// WithBackoff sets the wait after a failed unit: it starts at initial, doubles after
// each consecutive failure up to max, and is back to initial after a unit succeeds.
// Each wait is drawn uniformly from the upper half of its step, [step/2, step], so
// replicas that fail together do not retry together, and while the steps double no
// wait is shorter than the one before it.
// The defaults are DefaultBackoffInitial and DefaultBackoffMax.
func WithBackoff(initial, max time.Duration) LoopOption {
	return func(c *loopConfig) {
		if initial <= 0 {
			c.problems.Addf("backoff.initial", "must be positive, got %v", initial)
		}
		if max < initial {
			c.problems.Addf("backoff.max", "must be at least backoff.initial (%v), got %v", initial, max)
		}
		c.backoffInit, c.backoffMax = initial, max
	}
}

// WithStartDelay makes the first unit wait d, jittered like every other wait, instead
// of running as soon as Serve is called. A fleet that restarts together then does not
// run its first units together.
func WithStartDelay(d time.Duration) LoopOption {
	return func(c *loopConfig) {
		if d < 0 {
			c.problems.Addf("startDelay", "must not be negative, got %v", d)
		}
		c.startDelay = d
	}
}

// WithUnitTimeout gives each unit a ctx that expires after d. A unit that runs past
// it and returns an error counts as a failure and backs off. The default is no limit.
func WithUnitTimeout(d time.Duration) LoopOption {
	return func(c *loopConfig) {
		if d <= 0 {
			c.problems.Addf("unitTimeout", "must be positive, got %v", d)
		}
		c.unitTimeout = d
	}
}

// Loop returns an entrypoint named name that runs unit repeatedly, waiting every ±
// jitter (drawn uniformly, never below zero) after each unit that succeeds and a
// growing backoff after each that fails or panics. Nothing is checked or started
// until Bind and Serve.
func Loop(name string, unit func(ctx context.Context) error, every, jitter time.Duration, opts ...LoopOption) *LoopRunner {
	cfg := loopConfig{
		log:         zap.NewNop(),
		backoffInit: DefaultBackoffInitial,
		backoffMax:  DefaultBackoffMax,
	}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.log = cfg.log.With(zap.String("entrypoint", name))
	return &LoopRunner{name: name, what: fmt.Sprintf("loop %q unit", name), unit: unit, every: every, jitter: jitter, cfg: cfg}
}

// Name returns the name given to Loop.
func (r *LoopRunner) Name() string { return r.name }

// Bind checks the configuration and returns a *fault.ConfigError listing every problem
// with its field. It starts nothing.
func (r *LoopRunner) Bind(context.Context) error { return r.validate() }

func (r *LoopRunner) validate() error {
	var l fault.Problems
	if r.name == "" {
		l.Addf("name", "must not be empty")
	}
	if r.unit == nil {
		l.Addf("unit", "must not be nil")
	}
	if r.every <= 0 {
		l.Addf("every", "must be positive, got %v", r.every)
	}
	if r.jitter < 0 {
		l.Addf("jitter", "must not be negative, got %v", r.jitter)
	}
	l.Merge("", r.cfg.problems.Err())
	return l.Err()
}

// Serve starts the loop in a goroutine the runner owns and returns nil once stop is
// closed, with the loop still running units: background work goes on through the
// drain delay like any other intake. The first unit runs at once unless
// WithStartDelay says otherwise. Units get a ctx carrying ctx's values but not its
// cancellation; Stop cancels it.
//
// If ctx is done before stop, the Host has given up on the entrypoint: Serve cancels
// the running unit, waits for the loop to exit and returns ctx.Err(). Serve returns
// the Bind error if the configuration is invalid, and an error if called twice. It
// does not start the loop if Drain or Stop was called first.
func (r *LoopRunner) Serve(ctx context.Context, stop <-chan struct{}) error {
	if err := r.validate(); err != nil {
		return err
	}
	r.mu.Lock()
	if r.served {
		r.mu.Unlock()
		return fmt.Errorf("entrypoint: loop %q: Serve called twice", r.name)
	}
	r.served = true
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	unitCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.quit, r.cancel, r.done = make(chan struct{}), cancel, make(chan struct{})
	quit, done := r.quit, r.done
	go r.run(unitCtx, cancel, quit, done)
	r.mu.Unlock()
	return ServeUntil(ctx, stop, done, done, func() { r.halt(true) })
}

// Drain stops the loop between units: a unit that is running is left to finish, and
// no new one starts; a wait between units is cut short. Drain returns nil once the
// loop has exited. If ctx is done first it returns ctx.Err() and leaves the unit
// running for Stop. Drain does not cancel the unit's ctx; Stop does. Without a prior
// Serve it returns nil.
func (r *LoopRunner) Drain(ctx context.Context) error {
	return Await(ctx, r.halt(false))
}

// Stop cancels the ctx of a running unit, stops the loop and waits for it to exit. It
// returns nil once the loop has exited, or ctx.Err() if ctx is done first; a unit that
// ignores cancellation is then abandoned, still running. Without a prior Serve it
// returns nil.
func (r *LoopRunner) Stop(ctx context.Context) error {
	return Await(ctx, r.halt(true))
}

// halt tells the loop to stop between units and, when cut is set, cancels the
// running unit. It returns the channel closed when the loop has exited, or nil when
// the loop never started.
func (r *LoopRunner) halt(cut bool) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed && r.quit != nil {
		close(r.quit)
	}
	r.closed = true
	if cut && r.cancel != nil {
		r.cancel()
	}
	return r.done
}

// InFlight reports 1 while a unit is running and 0 otherwise.
func (r *LoopRunner) InFlight() int { return int(r.running.Load()) }

// LoopStats are a LoopRunner's counters since it was made.
type LoopStats struct {
	Runs                uint64 // units that returned or panicked
	Failures            uint64 // of those, units that returned an error or panicked
	ConsecutiveFailures uint64 // failures since the last unit that succeeded
}

// Stats returns the runner's counters. A readiness check can, for instance, report
// the loop degraded after a number of consecutive failures.
func (r *LoopRunner) Stats() LoopStats {
	return LoopStats{
		Runs:                r.runs.Load(),
		Failures:            r.failures.Load(),
		ConsecutiveFailures: r.failStreak.Load(),
	}
}

// run is the loop goroutine: unit, wait, unit, … until quit is closed.
func (r *LoopRunner) run(ctx context.Context, cancel context.CancelFunc, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer cancel()
	wait := time.Duration(0)
	if r.cfg.startDelay > 0 {
		wait = jittered(r.cfg.startDelay, r.jitter)
	}
	step := r.cfg.backoffInit
	for {
		if !Sleep(wait, quit) {
			return
		}
		err := r.runUnit(ctx)
		if ctx.Err() != nil { // Stop cut the unit; not the unit's failure
			r.cfg.log.Debug("loop unit interrupted by stop", zap.Error(err))
			return
		}
		if err == nil {
			r.failStreak.Store(0)
			step = r.cfg.backoffInit
			wait = jittered(r.every, r.jitter)
			continue
		}
		r.failures.Add(1)
		streak := r.failStreak.Add(1)
		wait = step/2 + rand.N(step/2+1)
		step = min(step*2, r.cfg.backoffMax)
		if step < 0 { // overflow past math.MaxInt64
			step = r.cfg.backoffMax
		}
		fields := []zap.Field{zap.Error(err), zap.Uint64("consecutive_failures", streak), zap.Duration("retry_in", wait)}
		if pe, ok := errors.AsType[*fault.PanicError](err); ok {
			fields = append(fields, zap.ByteString("stack", pe.Stack))
		}
		r.cfg.log.Error("loop unit failed", fields...)
	}
}

func (r *LoopRunner) runUnit(ctx context.Context) error {
	r.running.Store(1)
	defer r.running.Store(0)
	defer r.runs.Add(1)
	if r.cfg.unitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.unitTimeout)
		defer cancel()
	}
	return safe.Call(r.what, func() error { return r.unit(ctx) })
}

// jittered draws uniformly from [d-jitter, d+jitter], clamped to [0, MaxInt64].
func jittered(d, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return d
	}
	f := float64(d) + (2*rand.Float64()-1)*float64(jitter)
	switch {
	case f <= 0:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(f)
}
