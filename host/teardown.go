package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/internal/safe"
)

// courtesy is what a step is given beyond its expired deadline before it is abandoned,
// so that one returning right at its deadline is not counted as hung.
const courtesy = 50 * time.Millisecond

// teardown runs the exit, stages 1–9 of the shutdown sequence, undoing only what
// startup did. cause is the failure that made the service stop, or nil.
func (r *run) teardown(cause error) error {
	h := r.h
	h.shutdown.Begin() // readiness turns false here (Host.withdraw)
	r.failed(cause)
	begun := time.Now()
	force := forceContext(r.ctx, h.shutdown.forcing())
	defer force.cancel()

	// 1–2. Withdraw readiness; let the balancers notice while everything accepts.
	r.enter(StageAnnounce)
	r.announce(force)

	// 3. Drain phases, once, and only after a complete startup.
	if phases := h.lifecycle.DrainPhases(); r.wasReady && len(phases) > 0 {
		r.enter(StageDrainPhases)
		rep := hooks.RunDrainPhases(force, r.drainPhases(), h.budgets.DrainPhasesBudget, h.log)
		r.report.phases = rep
	}

	// 4. Drain each bound entrypoint in reverse, in one shared window.
	r.enter(StageDrain)
	r.drain(force)

	// 5. Hard stop, each under its own StepTimeout; a hung one is abandoned.
	r.enter(StageStop)
	r.stop()

	if h.shutdown.isCooperative() {
		h.log.Info("cooperative shutdown: waiting for MarkApplicationDrained")
		select {
		case <-h.shutdown.drained:
		case <-force.Done():
			r.report.overran("cooperative wait")
		}
	}

	// 6–8. Cleanup: the container is still open for pre_shutdown hooks.
	h.shutdown.startCleanup()
	r.enter(StagePreShutdown)
	r.report.errs("pre_shutdown", hooks.RunShutdown(r.ctx, hooks.PreShutdown,
		r.hooks(hooks.PreShutdown), h.budgets.StepTimeout, h.log))
	r.enter(StageWarmupStop)
	r.stopWarmups()
	r.enter(StageCloseScope)
	if r.scopeOpen {
		r.step("close container", func(ctx context.Context) error { return h.app.Stop(ctx) })
	}
	r.enter(StageFlush)
	r.step("flush telemetry", h.tel.flush)
	r.enter(StagePostShutdown)
	r.report.errs("post_shutdown", hooks.RunShutdown(r.ctx, hooks.PostShutdown,
		r.hooks(hooks.PostShutdown), h.budgets.StepTimeout, h.log))

	// 9. The probe listener closes last; then the one-line report.
	if h.probe != nil {
		r.step("close probe listener", h.probe.Close)
	}
	r.enter(StageStopped)
	h.shutdown.complete()
	err := r.result(cause)
	r.report.log(h, err, cause, time.Since(begun))
	_ = h.tel.sync()
	return err
}

// result decides what Run returns: the cause first, then a timeout.
func (r *run) result(cause error) error {
	switch {
	case cause != nil:
		return cause
	case r.h.shutdown.Result() == Timeout:
		return fmt.Errorf("%w: the %s deadline expired", ErrShutdownTimeout, r.h.budgets.Deadline)
	case len(r.report.overruns) > 0:
		return fmt.Errorf("%w: %v", ErrShutdownTimeout, r.report.overruns)
	}
	return nil
}

// announce waits for every Serve to return (each was asked to at the stop) and, if the
// service was ever ready, for the drain delay, both at once. A ForceCleanup or the
// Deadline cuts the wait.
func (r *run) announce(force context.Context) {
	h := r.h
	delay := time.Duration(0)
	if r.wasReady {
		delay = h.budgets.DrainDelay
	}
	if delay > 0 {
		h.log.Info("readiness withdrawn; waiting the drain delay with every entrypoint accepting",
			zap.Duration("drain_delay", delay))
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	serveWait := time.NewTimer(h.budgets.StepTimeout)
	defer serveWait.Stop()
	delayDone, gaveUp := delay == 0, false
	for (r.pending > 0 && !gaveUp) || !delayDone {
		var serveTimeout <-chan time.Time
		if r.pending > 0 && !gaveUp {
			serveTimeout = serveWait.C
		}
		select {
		case res := <-r.served:
			r.pending--
			r.servedAfterStop(res)
		case <-timer.C:
			delayDone = true
		case <-serveTimeout:
			gaveUp = true
			for _, e := range r.bound {
				if e.get() == entryServing {
					h.log.Error("entrypoint Serve did not return after stop; draining it anyway",
						zap.String("entrypoint", e.name))
				}
			}
			r.report.overran("serve return")
		case <-force.Done():
			return
		}
	}
}

// drain calls Drain on each bound entrypoint in reverse bind order. They share one
// window of DrainGrace, cut short by ForceCleanup or the Deadline; the Host waits
// DrainSlack beyond it before abandoning a Drain that has not returned.
func (r *run) drain(force context.Context) {
	h := r.h
	deadline := time.Now().Add(h.budgets.DrainGrace)
	waitUntil := deadline.Add(DrainSlack)
	ctx, cancel := context.WithDeadline(force, deadline)
	defer cancel()
	for _, e := range slices.Backward(r.bound) {
		e.set(entryDraining)
		before := inFlight(e)
		start := time.Now()
		extra := max(time.Until(waitUntil)-max(time.Until(deadline), 0), courtesy)
		what := fmt.Sprintf("entrypoint %q Drain", e.name)
		err := safe.Bounded(ctx, what, extra, r.unit(what, true, e.reg.Entrypoint.Drain))
		left := inFlight(e)
		var detail string
		if dr, ok := e.reg.Entrypoint.(entrypoint.DrainReporter); ok {
			detail = dr.DrainReport()
		}
		r.report.drained(e.name, before, left, time.Since(start), err, detail)
		switch {
		case errors.Is(err, fault.ErrAbandoned):
			h.log.Error("entrypoint Drain abandoned past its window", zap.String("entrypoint", e.name),
				zap.Int("in_flight", left))
			r.report.overran(e.name + " drain")
		case err != nil:
			h.log.Warn("entrypoint did not drain cleanly; Stop will cut what is left",
				zap.String("entrypoint", e.name), zap.Int("in_flight", left), zap.Error(err))
			if ctx.Err() == context.DeadlineExceeded {
				r.report.overran(e.name + " drain")
			}
		}
	}
}

// stop calls Stop on each bound entrypoint in reverse bind order, each with its own
// StepTimeout, then cancels the Serve context and collects every Serve.
func (r *run) stop() {
	h := r.h
	for _, e := range slices.Backward(r.bound) {
		if err := r.step(fmt.Sprintf("entrypoint %q Stop", e.name), e.reg.Entrypoint.Stop); err != nil {
			e.set(entryFailed)
			continue
		}
		e.set(entryStopped)
	}
	if r.cancelServe == nil {
		return
	}
	r.cancelServe()
	wait := time.NewTimer(h.budgets.StepTimeout)
	defer wait.Stop()
	for r.pending > 0 {
		select {
		case res := <-r.served:
			r.pending--
			r.servedAfterStop(res)
		case <-wait.C:
			h.log.Error("Serve still running after Stop; abandoning it", zap.Int("serve_calls", r.pending))
			r.report.overran("serve")
			return
		}
	}
}

// stopWarmups runs the Stop of each warmup step whose Start succeeded, in reverse.
func (r *run) stopWarmups() {
	for _, s := range slices.Backward(r.warmed) {
		if s.Stop != nil {
			r.step(fmt.Sprintf("warmup %q Stop", s.Name), s.Stop)
		}
	}
}

// step runs one cleanup step under StepTimeout; a failure is logged and reported, an
// overrun abandoned. The next step runs either way.
func (r *run) step(what string, fn func(context.Context) error) error {
	h := r.h
	ctx, cancel := context.WithTimeout(r.ctx, h.budgets.StepTimeout)
	defer cancel()
	err := safe.Bounded(ctx, what, courtesy, r.unit(what, true, fn))
	switch {
	case errors.Is(err, fault.ErrAbandoned):
		h.log.Error("step abandoned after its timeout", zap.String("step", what), zap.Duration("timeout", h.budgets.StepTimeout))
		r.report.overran(what)
		r.report.abandon(what)
	case err != nil:
		h.log.Error("step failed", zap.String("step", what), zap.Error(err))
		r.report.errs(what, err)
	}
	return err
}

func inFlight(e *entry) int {
	if f, ok := e.reg.Entrypoint.(entrypoint.InFlighter); ok {
		return f.InFlight()
	}
	return 0
}

// forced is a context cancelled when force is closed; cancel also waits for the
// goroutine that watches force.
type forced struct {
	context.Context
	cancel func()
}

func forceContext(parent context.Context, force <-chan struct{}) forced {
	ctx, cancel := context.WithCancel(parent)
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-force:
			cancel()
		case <-ctx.Done():
		}
	})
	return forced{ctx, func() { cancel(); wg.Wait() }}
}
