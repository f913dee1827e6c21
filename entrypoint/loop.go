package entrypoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/internal/wait"
)

var _ interface {
	Entrypoint
	InFlighter
	DefaultsUser
} = (*Loop)(nil)

// LoopConfig configures a Loop. Every zero field but Name and Every takes the
// default its doc states.
type LoopConfig struct {
	// Name identifies the loop in logs, metrics and errors. Required.
	Name string
	// Every is the wait after a unit that succeeded. Required, positive.
	Every time.Duration
	// Jitter widens every wait (after a success, and the start delay) to a duration
	// drawn uniformly from [wait−Jitter, wait+Jitter], never below zero, so that
	// replicas do not run their units in step. Default: JitterFraction of Every.
	Jitter time.Duration
	// JitterFraction sets Jitter, when Jitter is 0, to this fraction of Every. It
	// must lie in [0, 1). Default 0.1: a loop every 10s waits 9–11s. Set NoJitter
	// to turn jitter off.
	JitterFraction float64
	// NoJitter turns jitter off, explicitly: every wait is exactly Every and the
	// start delay exactly StartDelay, so replicas started together stay in step.
	// It may not be set with Jitter or JitterFraction.
	NoJitter bool
	// StartDelay makes the first unit wait StartDelay, jittered, instead of running
	// as soon as Serve is called, so that a fleet that restarts together does not
	// run its first units together. Default 0: at once.
	StartDelay time.Duration
	// UnitTimeout gives each unit a ctx that expires after it; a unit that runs past
	// it and returns an error counts as a failure and backs off. Default 0: no limit.
	UnitTimeout time.Duration
	// Backoff is the wait after a unit that failed or panicked. Default: Initial
	// 100ms, Max 30s.
	Backoff Backoff
}

// Backoff is a retry schedule: the wait after a failure starts at Initial, doubles
// after each consecutive failure up to Max, and is back to Initial after a success.
// Each wait is drawn uniformly from the upper half of its step, [step/2, step], so
// replicas that fail together do not retry together, and while the steps double no
// wait is shorter than the one before it. Zero fields take the defaults: Initial
// 100ms, Max 30s (or Initial, when that is larger).
type Backoff struct {
	Initial, Max time.Duration
}

// resolve fills in the defaults and records every problem in l, each under its
// field's name.
func (c LoopConfig) resolve(l *fault.Problems) LoopConfig {
	if c.Name == "" {
		l.Addf("Name", "must not be empty")
	}
	if c.Every <= 0 {
		l.Addf("Every", "must be positive, got %v", c.Every)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"Jitter", c.Jitter}, {"StartDelay", c.StartDelay}, {"UnitTimeout", c.UnitTimeout},
		{"Backoff.Initial", c.Backoff.Initial}, {"Backoff.Max", c.Backoff.Max}} {
		if f.d < 0 {
			l.Addf(f.name, "must not be negative, got %v", f.d)
		}
	}
	wait.CheckJitterFraction(l, "JitterFraction", c.JitterFraction)
	switch {
	case c.NoJitter && (c.Jitter != 0 || c.JitterFraction != 0):
		l.Addf("NoJitter", "must not be set with Jitter (%v) or JitterFraction (%v)", c.Jitter, c.JitterFraction)
	case c.NoJitter:
	case c.Jitter == 0 && c.Every > 0:
		c.Jitter = time.Duration(cmp.Or(c.JitterFraction, wait.JitterFraction) * float64(c.Every))
	}
	if c.Backoff.Initial > 0 && c.Backoff.Max > 0 && c.Backoff.Max < c.Backoff.Initial {
		l.Addf("Backoff.Max", "must be at least Backoff.Initial (%v), got %v", c.Backoff.Initial, c.Backoff.Max)
	}
	c.Backoff.Initial = cmp.Or(c.Backoff.Initial, wait.BackoffInitial)
	c.Backoff.Max = cmp.Or(c.Backoff.Max, max(wait.BackoffMax, c.Backoff.Initial))
	return c
}

// An Option adds an optional part to a Loop or a Task.
type Option func(*options)

type options struct {
	given Telemetry // the telemetry the options gave; SetDefaults fills in the rest
}

// WithTelemetry gives a Loop or a Task the logger and the error reporter it uses:
// the logger receives a Loop's unit failures and the line that says how a stop ended
// a Task's work; the reporter receives each panic of a Loop's unit, and a panic of a
// Task's work that Serve does not return (a stop came first), recovered as a
// *fault.PanicError with its stack and tagged with the entrypoint
// (fault.TagEntrypoint). Its nil fields are taken from the Host (see DefaultsUser);
// with neither, failures are discarded and panics only logged. The other fields are
// not used.
func WithTelemetry(t Telemetry) Option {
	return func(o *options) { o.given = t.Or(o.given) }
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Loop is background work run as an entrypoint: a relay, a poller, a sweeper. It
// runs a unit of work over and over, one at a time, waiting between units, and stops
// only between units when drained. Make one with NewLoop.
type Loop struct {
	cfg     LoopConfig
	what    string // names the unit in a *fault.PanicError
	unit    func(context.Context) error
	log     atomic.Pointer[zap.Logger]
	running atomic.Int32 // 1 while a unit runs

	runs       atomic.Uint64
	failures   atomic.Uint64
	failStreak atomic.Uint64
	permanent  error // the fault.Permanent failure that ended the loop; written before done closes

	base     Base               // the phase, under its lock with the fields below
	reporter fault.Reporter     // nil: panics are only logged; set before Serve
	quit     chan struct{}      // closed to stop the loop between units
	cancel   context.CancelFunc // cancels the units' ctx
	done     chan struct{}      // closed when the loop goroutine has exited
}

// NewLoop checks cfg and returns a Loop that runs unit repeatedly, waiting
// cfg.Every ± cfg.Jitter after each unit that succeeds and a growing backoff after
// each that fails or panics. A unit that fails with an error marked by
// fault.Permanent ("retrying cannot fix it") is not retried: the loop stops, and
// Serve returns the error (see Serve). Every problem with cfg or unit is reported in one
// *fault.ConfigError naming its field; nothing is started until Serve.
func NewLoop(cfg LoopConfig, unit func(ctx context.Context) error, opts ...Option) (*Loop, error) {
	o := newOptions(opts)
	var l fault.Problems
	cfg = cfg.resolve(&l)
	if unit == nil {
		l.Addf("unit", "must not be nil")
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	r := &Loop{cfg: cfg, what: fmt.Sprintf("loop %q unit", cfg.Name), unit: unit}
	_ = r.base.Init(cfg.Name, o.given, r.use) // use never fails
	return r, nil
}

// use takes the logger and the error reporter of t; the Base calls it with what the
// options gave, and again from SetDefaults merged with the Host's.
func (r *Loop) use(t Telemetry) error {
	l := t.Logger
	if l == nil {
		l = zap.NewNop()
	}
	r.log.Store(l.With(zap.String("entrypoint", r.cfg.Name)))
	r.reporter = t.Reporter
	return nil
}

// SetDefaults takes the Host's logger and error reporter (for the units' panics) for
// what the options did not give. It does nothing once the Loop is bound, and never
// fails.
func (r *Loop) SetDefaults(d Telemetry) error { return r.base.SetDefaults(d) }

// Name returns LoopConfig.Name.
func (r *Loop) Name() string { return r.base.Name() }

// Bind starts nothing: NewLoop checked everything already. It refuses a second call.
func (r *Loop) Bind(context.Context) error {
	r.base.Lock()
	defer r.base.Unlock()
	if err := r.base.Bind(); err != nil {
		return err
	}
	r.base.Bound()
	return nil
}

// Serve starts the loop in a goroutine the Loop owns and returns nil once stop is
// closed, with the loop still running units: background work goes on through the
// drain delay like any other intake. The first unit runs at once unless StartDelay
// says otherwise. Units get a ctx carrying ctx's values but not its cancellation;
// Stop cancels it.
//
// If a unit fails with an error marked by fault.Permanent before stop, the loop ends
// and Serve returns that error, still marked, so that the Host stops the service as
// for any failed entrypoint instead of retrying what cannot succeed. After stop such a
// failure ends the loop too (the drain finds it ended) and is logged only. Serve may
// be called again after such a failure: the loop starts afresh, as on a first Serve.
// The Host does not do so — a failure marked permanent is not restarted, even on a
// NonEssential registration — and a failure that is not permanent never ends the
// loop: the unit backs off and runs again, so a Loop needs no restart.
//
// If ctx is done before stop, the Host has given up on the entrypoint: Serve cancels
// the running unit, waits for the loop to exit, at most hooks.AbandonAfter, and
// returns ctx.Err() (joined with an error wrapping fault.ErrAbandoned when the unit
// ignored its cancellation and the loop did not exit in time). Serve before
// Bind, or twice, returns an error wrapping ErrOutOfTurn. It does not start the loop,
// and returns nil, if Drain or Stop was called first.
func (r *Loop) Serve(ctx context.Context, stop <-chan struct{}) error {
	r.base.Lock()
	if start, err := r.base.Serve(); !start {
		r.base.Unlock()
		return err
	}
	unitCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.quit, r.cancel, r.done = make(chan struct{}), cancel, make(chan struct{})
	r.permanent = nil // a Serve after a failure starts afresh
	quit, done := r.quit, r.done
	go r.run(unitCtx, cancel, quit, done)
	r.base.Unlock()
	err := wait.ServeUntil(ctx, fmt.Sprintf("loop %q", r.cfg.Name), stop, done, func() <-chan struct{} { return r.halt(haltStop) })
	if err == nil && closed(done) && r.permanent != nil { // done closed after r.permanent was written
		r.base.Lock()
		r.base.Rearm() // ended on its own: Serve may start it again, unless Drain or Stop came
		r.base.Unlock()
		return fmt.Errorf("loop %q: %w", r.cfg.Name, r.permanent)
	}
	return err
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Drain stops the loop between units: a unit that is running is left to finish, and
// no new one starts; a wait between units is cut short. Drain returns nil once the
// loop has exited. If ctx is done first it returns ctx.Err() and leaves the unit
// running for Stop. Drain does not cancel the unit's ctx; Stop does. Without a prior
// Serve it returns nil.
func (r *Loop) Drain(ctx context.Context) error {
	return wait.Await(ctx, r.halt(haltDrain))
}

// Stop cancels the ctx of a running unit, stops the loop and waits for it to exit. It
// returns nil once the loop has exited, or ctx.Err() if ctx is done first; a unit that
// ignores cancellation is then abandoned, still running. Without a prior Serve it
// returns nil.
func (r *Loop) Stop(ctx context.Context) error {
	return wait.Await(ctx, r.halt(haltStop))
}

// haltKind says how far halt goes.
type haltKind int

const (
	haltDrain haltKind = iota // stop the loop between units
	haltStop                  // and cancel the running unit
)

// halt moves the phase, tells the loop to stop between units and, for Stop, cancels
// the running unit. It returns the channel closed when the loop has exited, or nil
// when the loop never started.
func (r *Loop) halt(k haltKind) <-chan struct{} {
	r.base.Lock()
	defer r.base.Unlock()
	var turn Turn
	if k == haltStop {
		turn = r.base.Stop()
	} else {
		turn = r.base.Drain()
	}
	if turn != Served {
		return r.done // nil: the loop never started
	}
	if !closed(r.quit) { // a Stop after Drain finds it closed
		close(r.quit)
	}
	if k == haltStop {
		r.cancel()
	}
	return r.done
}

// InFlight reports 1 while a unit is running and 0 otherwise.
func (r *Loop) InFlight() int { return int(r.running.Load()) }

// LoopStats are a Loop's counters since it was made.
type LoopStats struct {
	Runs                uint64 // units that returned or panicked
	Failures            uint64 // of those, units that returned an error or panicked
	ConsecutiveFailures uint64 // failures since the last unit that succeeded
}

// Stats returns the Loop's counters. A readiness check can, for instance, report
// the loop degraded after a number of consecutive failures.
func (r *Loop) Stats() LoopStats {
	return LoopStats{
		Runs:                r.runs.Load(),
		Failures:            r.failures.Load(),
		ConsecutiveFailures: r.failStreak.Load(),
	}
}

// run is the loop goroutine: unit, wait, unit, … until quit is closed.
func (r *Loop) run(ctx context.Context, cancel context.CancelFunc, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer cancel()
	log := r.log.Load()
	next := time.Duration(0)
	if r.cfg.StartDelay > 0 {
		next = wait.Jitter(r.cfg.StartDelay, r.cfg.Jitter)
	}
	backoff := wait.Backoff{Initial: r.cfg.Backoff.Initial, Max: r.cfg.Backoff.Max}
	for {
		if !wait.Sleep(next, quit) {
			return
		}
		err := r.runUnit(ctx)
		if ctx.Err() != nil { // Stop cut the unit; not the unit's failure
			log.Debug("loop unit interrupted by stop", zap.Error(err))
			return
		}
		if err == nil {
			r.failStreak.Store(0)
			backoff.Reset()
			next = wait.Jitter(r.cfg.Every, r.cfg.Jitter)
			continue
		}
		r.failures.Add(1)
		streak := r.failStreak.Add(1)
		if fault.IsPermanent(err) {
			r.permanent = err
			log.Error("loop unit failed permanently; the loop stops", zap.Error(err),
				zap.Uint64("consecutive_failures", streak))
			return
		}
		next = backoff.Next()
		fields := []zap.Field{zap.Error(err), zap.Uint64("consecutive_failures", streak), zap.Duration("retry_in", next)}
		if pe, ok := errors.AsType[*fault.PanicError](err); ok {
			fields = append(fields, zap.ByteString("stack", pe.Stack))
			safe.ReportPanic(ctx, r.reporter, r.cfg.Name, err)
		}
		log.Error("loop unit failed", fields...)
	}
}

func (r *Loop) runUnit(ctx context.Context) error {
	r.running.Store(1)
	defer r.running.Store(0)
	defer r.runs.Add(1)
	if r.cfg.UnitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.UnitTimeout)
		defer cancel()
	}
	return safe.Call(r.what, func() error { return r.unit(ctx) })
}
