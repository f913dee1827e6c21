package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/internal/hookrun"
	"github.com/servicewright/servicewright/internal/safe"
)

// courtesy is what a step is given beyond its expired deadline before it is abandoned,
// so that one returning right at its deadline is not counted as hung.
const courtesy = 50 * time.Millisecond

// teardown runs the exit, undoing only what startup did. cause is the failure that
// made the service stop, or nil. Every wait in it has a limit; WorstCase sums them.
//
// The result is settled before the post_shutdown hooks run (Shutdown.Result is final
// from then on); what fails after is reported beside it, never changes it. A flush
// that cannot deliver telemetry is a warning and a count, never a failure: the exit
// code is the work's, not the telemetry backend's.
func (r *run) teardown(cause error) error {
	h := r.h
	h.shutdown.Begin()
	h.withdraw()
	r.failed(cause)
	r.report.sd = h.shutdown
	switch {
	case errors.Is(cause, fault.ErrInterrupted):
		h.shutdown.worsen(ResultInterrupted)
	case cause != nil:
		h.shutdown.worsen(ResultFailure)
	}
	begun := time.Now()
	force, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	var cutAt atomic.Int32 // 1 + the stage the Deadline or ForceCleanup came in
	unlink := context.AfterFunc(h.shutdown.forcing(), func() {
		cutAt.Store(1 + h.stage.Load())
		cancel(context.Cause(h.shutdown.forcing()))
	})
	defer unlink()

	// Readiness is withdrawn; the balancers notice while everything accepts.
	r.enter(StageDrainDelay)
	r.announce(force)

	// Drain hooks, once, and only after a complete startup.
	if r.complete && len(r.lc.phases) > 0 {
		r.enter(StageDrainHooks)
		r.report.phases = h.drainPhasesOnce(force, r.drainPhases()) // prestop.go: not again if PreStop ran them
		for _, p := range r.report.phases.Phases {
			if p.Outcome == hookrun.Abandoned { // hung: it ignored its cancellation
				r.report.overran(fmt.Sprintf("drain hook %q", p.Name))
				r.report.abandon(fmt.Sprintf("drain hook %q", p.Name))
			}
		}
	}

	// Every entrypoint drains at once, each in the whole window.
	r.enter(StageDrain)
	windowEnd := r.drain(force)

	// Hard stop in reverse bind order, each under its own StepTimeout.
	r.enter(StageStop)
	r.stop()
	r.cooperativeWait(force, windowEnd)

	// Cleanup: the container is still open for pre_shutdown hooks. The shutdown
	// hooks run only when startup reached pre_start.
	h.shutdown.startCleanup()
	if r.hooksRan {
		r.enter(StagePreShutdown)
		r.shutdownHooks(hooks.PreShutdown)
		h.refuseLate(r.lc)
	}
	r.enter(StageWarmupStop)
	for _, s := range slices.Backward(r.warmed) {
		if s.Stop != nil {
			r.step(fmt.Sprintf("warmup %q Stop", s.Name), s.Stop)
		}
	}
	h.mu.Lock()
	closers := h.closers
	h.mu.Unlock()
	if r.scopeOpen || len(closers) > 0 {
		r.enter(StageCloseScope)
	}
	if r.scopeOpen {
		r.step("close container", func(ctx context.Context) error { return h.scope.Close(ctx) })
	}
	for _, c := range slices.Backward(closers) {
		r.step(fmt.Sprintf("close %q", c.name), c.close)
	}
	r.enter(StageFlush)
	reported := r.flush(h.tel.flush)

	// The verdict is final here: post_shutdown hooks read it through Result.
	res, err := r.result(cause, cutAt.Load())
	h.shutdown.settle(res)
	r.report.settled = true
	// Counted now, while the probe listener still serves /metrics: a count made
	// after it closed would never be scraped.
	h.tel.metrics.shutdowns.WithLabelValues(res.String()).Inc()
	if r.hooksRan {
		r.enter(StagePostShutdown)
		r.shutdownHooks(hooks.PostShutdown)
	}
	if h.probe != nil {
		r.enter(StageCloseProbes)
		r.step("close probe listener", h.probe.close)
	}
	if h.tel.reported() != reported {
		// A post_shutdown hook or the probe close reported something (a panic)
		// after the flush: flush the error reporter once more.
		r.flush(h.tel.flushReporter)
	}
	r.enter(StageStopped)
	if at := cutAt.Load(); at > 0 {
		r.report.cut = fmt.Sprintf("%v (in stage %s)", context.Cause(h.shutdown.forcing()), Stage(at-1))
	}
	h.shutdown.complete()
	r.report.log(h, res, err, cause, time.Since(begun))
	_ = h.tel.sync()
	return err
}

// flush runs fn, one of the telemetry flushes, under StepTimeout. What it could not
// deliver — the backend hung, refused or answered an error, or the flush was
// abandoned — is logged once as a warning, counted in
// servicewright_telemetry_undelivered_total and named in the report; it neither
// fails the exit nor makes it a timeout. It returns the reporter's count of reports
// as the flush began.
func (r *run) flush(fn func(context.Context) []loss) uint64 {
	h := r.h
	seen := h.tel.reported()
	ctx, cancel := context.WithTimeout(r.ctx, h.budgets.StepTimeout)
	defer cancel()
	got := make(chan []loss, 1)
	err := safe.Bounded(ctx, "flush telemetry", courtesy, r.unit("flush telemetry", true, func(ctx context.Context) error {
		got <- fn(ctx)
		return nil
	}))
	var lost []loss
	select {
	case lost = <-got:
	default:
		lost = h.tel.lostAll(err)
	}
	for _, l := range lost {
		h.tel.metrics.undelivered.WithLabelValues(l.signal).Inc()
		r.report.lost = append(r.report.lost, l.signal+": "+l.err.Error())
	}
	if len(lost) > 0 {
		r.log().Warn("telemetry not delivered at exit; the exit is not failed for it",
			zap.Strings("undelivered", r.report.lost), zap.Duration("timeout", h.budgets.StepTimeout))
	}
	return seen
}

// result decides what Run returns and how the shutdown ended: the cause first, then
// a failed cleanup step, then a timeout. cutAt is 1 + the stage in which the
// Deadline or ForceCleanup came, or 0.
func (r *run) result(cause error, cutAt int32) (Result, error) {
	switch {
	case errors.Is(cause, fault.ErrInterrupted):
		return ResultInterrupted, cause
	case cause != nil:
		return ResultFailure, cause
	case len(r.report.failures) > 0:
		return ResultFailure, fmt.Errorf("%w: %w", ErrCleanupFailed, errors.Join(r.report.failures...))
	case r.h.shutdown.timedOut.Load():
		at := r.h.Stage() // the Deadline has just expired: its cut is still on its way
		if cutAt > 0 {
			at = Stage(cutAt - 1)
		}
		return ResultTimeout, fmt.Errorf("%w: the %s deadline expired in stage %s", ErrShutdownTimeout, r.h.budgets.Deadline, at)
	case len(r.report.overruns) > 0:
		return ResultTimeout, fmt.Errorf("%w: %v", ErrShutdownTimeout, r.report.overruns)
	}
	return ResultSuccess, nil
}

// announce waits for every Serve to return (each was asked to at the stop), at most
// StepTimeout, and, if the service was ever ready, for the drain delay, both at once.
// A ForceCleanup or the Deadline cuts the wait.
func (r *run) announce(force context.Context) {
	h := r.h
	delay := time.Duration(0)
	if r.wasReady {
		delay = h.drainDelayLeft() // prestop.go: less what PreStop already waited
	}
	if delay > 0 {
		r.log().Info("readiness withdrawn; waiting the drain delay with every entrypoint accepting",
			zap.Duration("drain_delay", delay))
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	serveWait := time.NewTimer(h.budgets.StepTimeout)
	defer serveWait.Stop()
	g := r.serve
	waiting := func() bool { return g != nil && g.pending > 0 }
	delayDone, gaveUp := delay == 0, false
	for (waiting() && !gaveUp) || !delayDone {
		var results <-chan serveResult
		var serveTimeout <-chan time.Time
		if waiting() && !gaveUp {
			results, serveTimeout = g.results, serveWait.C
		}
		select {
		case res := <-results:
			g.pending--
			r.servedAfterStop(res)
		case <-timer.C:
			delayDone = true
		case <-serveTimeout:
			gaveUp = true
			for _, e := range r.bound {
				if e.get() == entryServing {
					r.log().Error("entrypoint Serve did not return after stop; draining it anyway",
						zap.String("entrypoint", e.name))
				}
			}
			r.report.overran("serve return")
		case <-force.Done():
			return
		}
	}
}

// drain calls Drain on every bound entrypoint at once. Each ctx has the same deadline,
// DrainGrace from now, cut short by ForceCleanup or the Deadline; the Host waits
// drainSlack beyond it before abandoning a Drain that has not returned. One slow
// drain never shortens another's window, and an entrypoint that is not draining yet
// never keeps accepting while another drains. It returns the window's end.
//
// A Drain that returns an error of its own (a final commit refused or abandoned,
// messages left uncommitted) failed: the result is failure, whenever it returned.
// One abandoned, or returning its ctx's error after its window ran out, overran it:
// timeout. One cut short by ForceCleanup or the Deadline, returning its ctx's error,
// is neither on its own account.
func (r *run) drain(force context.Context) time.Time {
	h := r.h
	deadline := time.Now().Add(h.budgets.DrainGrace)
	ctx, cancel := context.WithDeadline(force, deadline)
	defer cancel()
	type outcome struct {
		before, left int
		took         time.Duration
		err          error
		late         bool // the window had run out when it returned
		cut          bool // the window had ended, run out or cut short, when it returned
		returned     atomic.Bool
	}
	out := make([]outcome, len(r.bound))
	var wg sync.WaitGroup
	for i, e := range r.bound {
		e.set(entryDraining)
		o := &out[i]
		o.before = inFlight(e)
		what := fmt.Sprintf("entrypoint %q Drain", e.name)
		unit := r.unit(what, true, e.reg.Entrypoint.Drain)
		drain := func(ctx context.Context) error {
			err := unit(ctx)
			o.returned.Store(true) // its own error may wrap fault.ErrAbandoned too
			return err
		}
		wg.Go(func() {
			start := time.Now()
			o.err = safe.Bounded(ctx, what, drainSlack, drain)
			o.late = errors.Is(ctx.Err(), context.DeadlineExceeded)
			o.cut = ctx.Err() != nil
			o.took = time.Since(start)
		})
	}
	wg.Wait()
	for i := len(r.bound) - 1; i >= 0; i-- {
		e, o := r.bound[i], &out[i]
		o.left = inFlight(e)
		var detail string
		if dr := e.caps.DrainReport; dr != nil {
			detail = dr.DrainReport()
		}
		r.report.drained(e.name, o.before, o.left, o.took, o.err, detail)
		switch {
		case !o.returned.Load() && errors.Is(o.err, fault.ErrAbandoned):
			r.log().Error("entrypoint Drain abandoned past its window", zap.String("entrypoint", e.name),
				zap.Int("in_flight", o.left))
			r.report.overran(e.name + " drain")
		case o.err != nil && (!o.cut || !ctxErr(o.err)):
			// Its own failure (a final commit refused or abandoned, a close that
			// failed): the work it held is not known to be safe.
			r.log().Error("entrypoint Drain failed; Stop will cut what is left",
				zap.String("entrypoint", e.name), zap.Int("in_flight", o.left), zap.Error(o.err))
			r.report.errs(fmt.Sprintf("entrypoint %q Drain", e.name), o.err)
			if o.late {
				r.report.overran(e.name + " drain")
			}
		case o.err != nil:
			r.log().Warn("entrypoint did not drain within its window; Stop will cut what is left",
				zap.String("entrypoint", e.name), zap.Int("in_flight", o.left), zap.Error(o.err))
			if o.late {
				r.report.overran(e.name + " drain")
			}
		}
	}
	return deadline
}

// stop calls Stop on each bound entrypoint in reverse bind order, each with its own
// StepTimeout, then cancels the Serve context and waits, at most StepTimeout, for
// every Serve to return.
func (r *run) stop() {
	h := r.h
	for _, e := range slices.Backward(r.bound) {
		if err := r.step(fmt.Sprintf("entrypoint %q Stop", e.name), e.reg.Entrypoint.Stop); err != nil {
			e.set(entryFailed)
			continue
		}
		e.set(entryStopped)
	}
	if r.serve == nil {
		return
	}
	r.serve.cancel()
	if !r.serve.collect(h.budgets.StepTimeout, r.servedAfterStop) {
		r.log().Error("Serve still running after Stop; abandoning it", zap.Int("serve_calls", r.serve.pending))
		r.report.overran("serve")
	}
}

// cooperativeWait, in a cooperative shutdown, waits for MarkApplicationDrained, but
// no later than the end of the drain window, a ForceCleanup or the Deadline. A wait
// that ends with the window overran it (timeout); one ended by ForceCleanup did not.
func (r *run) cooperativeWait(force context.Context, windowEnd time.Time) {
	h := r.h
	if !h.shutdown.isCooperative() {
		return
	}
	r.log().Info("cooperative shutdown: waiting for MarkApplicationDrained",
		zap.Duration("at_most", max(time.Until(windowEnd), 0)))
	t := time.NewTimer(max(time.Until(windowEnd), 0))
	defer t.Stop()
	select {
	case <-h.shutdown.drained:
		return
	case <-t.C:
		r.log().Error("cooperative shutdown: the application did not call MarkApplicationDrained within the drain window; cleaning up")
		r.report.overran("cooperative wait")
	case <-force.Done():
		// ForceCleanup is the application's own word that the wait is over: not an
		// overrun. The Deadline makes the result timeout by itself.
		r.log().Info("cooperative shutdown: wait cut short", zap.NamedError("by", context.Cause(force)))
	}
}
