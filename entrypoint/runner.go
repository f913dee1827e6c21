package entrypoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/internal/wait"
)

// ErrReturnedEarly is what Runner.Serve returns, wrapped with the entrypoint's name,
// when the work function returns nil before the Host's stop: an entrypoint that stops
// taking work on its own is a failure of that entrypoint.
var ErrReturnedEarly = errors.New("entrypoint: work returned before stop")

// Work is the body of a hand-written entrypoint run by a Runner. It takes work until
// draining is closed and then returns, after finishing (or handing back) what it
// already took; it must never take a new unit once draining is closed. ctx is
// cancelled at Stop, when whatever is still running must be cut off, and when the
// Host gives up on the entrypoint.
//
// Units handled concurrently (one goroutine per connection, say) are counted through
// the Runner's Gate, so that Drain waits for them too.
type Work func(ctx context.Context, draining <-chan struct{}) error

// A Runner is the part of a hand-written entrypoint that the Host's rules make hard
// to get right: the call-order guard, the goroutine that runs the work, a Drain that
// waits for the work to return and for the units it admitted through the Gate, and a
// Stop that is safe before Serve (the Host stops a bound entrypoint whose Serve never
// ran, after a failed post_start hook) and safe twice. Embed a Runner, implement
// Name, Bind and Serve by calling the Runner's, and the entrypoint is complete:
//
//	type queue struct {
//		*entrypoint.Runner
//		jobs <-chan string
//	}
//
//	func (q *queue) Name() string                      { return "queue" }
//	func (q *queue) Bind(ctx context.Context) error    { return q.Runner.Bind(ctx, nil) }
//	func (q *queue) Serve(ctx context.Context, stop <-chan struct{}) error {
//		return q.Runner.Serve(ctx, stop, q.work)
//	}
//
// Drain, Stop and InFlight come from the Runner. A panic in the work function is
// recovered and returned as a *fault.PanicError naming the entrypoint.
//
// The zero Runner is not usable; make one with NewRunner.
type Runner struct {
	base Base // the phase, under its lock with the fields below
	gate Gate

	draining chan struct{}      // closed by Drain and by Stop
	done     chan struct{}      // closed when the work returned; nil until Serve started it
	cancel   context.CancelFunc // cuts the work's ctx; nil until Serve started it
	err      error              // what the work returned, once done is closed
}

// NewRunner returns a Runner for the entrypoint called name.
func NewRunner(name string) *Runner {
	r := &Runner{draining: make(chan struct{})}
	_ = r.base.Init(name, Telemetry{}, nil) // no telemetry to take: it cannot fail
	return r
}

// UseTelemetry gives the Runner the telemetry an entrypoint built on it was given
// and the function that takes it, as Base.Init does: use is called now with given,
// and again by SetDefaults with given merged with the Host's. Call it once, right
// after NewRunner; it returns use's error.
func (r *Runner) UseTelemetry(given Telemetry, use func(t Telemetry) error) error {
	return r.base.Init(r.base.Name(), given, use)
}

// SetDefaults hands the Host's telemetry to the function given to Init, as
// Base.SetDefaults does; without UseTelemetry it does nothing.
func (r *Runner) SetDefaults(host Telemetry) error { return r.base.SetDefaults(host) }

// Gate returns the Gate through which the work admits units it runs concurrently.
// Drain closes it once the work returned and waits for what it admitted.
func (r *Runner) Gate() *Gate { return &r.gate }

// InFlight reports the units admitted through the Gate and not yet done — a work
// function that handles its units inline, one at a time, admits each through the
// Gate too, so that it is counted — plus one once draining is closed while the work
// function has not returned (it is finishing what it took). An idle work function,
// waiting for its next unit, counts nothing. The Host shows the figure in
// /debug/lifecycle and the shutdown report.
func (r *Runner) InFlight() int {
	n := r.gate.InFlight()
	r.base.Lock()
	defer r.base.Unlock()
	if r.done == nil {
		return n
	}
	select {
	case <-r.done: // checked first: once the work returned, draining no longer counts
		return n
	default:
	}
	select {
	case <-r.draining:
		n++
	default:
	}
	return n
}

// Bind calls open, if not nil, when the Runner is new, and marks it bound when open
// succeeds; a failed open may be retried. Out of turn it returns an ErrOutOfTurn
// error and does not call open.
func (r *Runner) Bind(ctx context.Context, open func(ctx context.Context) error) error {
	r.base.Lock()
	defer r.base.Unlock()
	if err := r.base.Bind(); err != nil {
		return err
	}
	if open != nil {
		if err := safe.Call(fmt.Sprintf("entrypoint %q Bind", r.base.Name()), func() error { return open(ctx) }); err != nil {
			return err
		}
	}
	r.base.Bound()
	return nil
}

// Serve starts work in a goroutine the Runner owns and returns nil when stop closes,
// with the work still running: it keeps taking work through the drain delay, until
// Drain. If the work returns before stop, Serve returns its error, or an error
// wrapping ErrReturnedEarly when it returned nil: either is a failure of the
// entrypoint. If ctx is done first, the Host has given up on the entrypoint: Serve
// cancels the work's ctx, waits for the work at most hooks.AbandonAfter and returns
// ctx.Err() (joined with an error wrapping fault.ErrAbandoned when it did not return
// in time). After Drain or Stop, Serve starts nothing and returns nil.
//
// After the work failed (returned before stop), Serve may be called again: it starts
// the work afresh. That is how the Host restarts a failed non-essential entrypoint
// (host.Registration.NonEssential) with its backoff; the Runner itself never
// restarts the work on its own.
func (r *Runner) Serve(ctx context.Context, stop <-chan struct{}, work Work) error {
	r.base.Lock()
	start, err := r.base.Serve()
	if !start || err != nil {
		r.base.Unlock()
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	r.done, r.cancel, r.err = done, cancel, nil
	draining := r.draining
	r.base.Unlock()

	what := fmt.Sprintf("entrypoint %q work", r.base.Name())
	go func() {
		defer close(done)
		err := safe.Call(what, func() error { return work(wctx, draining) })
		r.base.Lock()
		r.err = err
		r.base.Unlock()
	}()

	if err := wait.ServeUntil(ctx, what, stop, done, func() <-chan struct{} { cancel(); return done }); err != nil {
		return err // the Host gave up
	}
	select {
	case <-stop: // also when the work saw the stop's drain first: not early
		return nil
	default: // the work returned first
		r.base.Lock()
		defer r.base.Unlock()
		r.cancel() // the work returned: release its ctx
		r.base.Rearm()
		if r.err != nil {
			return r.err
		}
		return fmt.Errorf("entrypoint %q: %w", r.base.Name(), ErrReturnedEarly)
	}
}

// Drain closes draining, so the work takes nothing new, waits for the work to
// return, then closes the Gate and waits for the units it admitted. It returns the
// work's error, if any, once everything finished; on ctx expiry it returns ctx.Err()
// and leaves what still runs to Stop. Before Serve it has nothing to wait for and
// returns nil.
func (r *Runner) Drain(ctx context.Context) error {
	r.base.Lock()
	r.base.Drain()
	r.closeDraining()
	done := r.done
	r.base.Unlock()

	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.gate.Close()
	if err := r.gate.Wait(ctx); err != nil {
		return err
	}
	r.base.Lock()
	defer r.base.Unlock()
	return r.err
}

// Stop closes draining, cancels the work's ctx so whatever still runs is cut off, and
// waits for the work to return until ctx expires, returning ctx.Err() then. Units
// admitted through the Gate are cut through the same ctx; Stop does not wait for
// them. Stop before Serve, or a second Stop, returns nil at once.
func (r *Runner) Stop(ctx context.Context) error {
	r.base.Lock()
	turn := r.base.Stop()
	r.closeDraining()
	r.gate.Close()
	done, cancel := r.done, r.cancel
	r.base.Unlock()

	if turn != Served || done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeDraining closes the draining channel once. r.mu must be held.
func (r *Runner) closeDraining() {
	select {
	case <-r.draining:
	default:
		close(r.draining)
	}
}
