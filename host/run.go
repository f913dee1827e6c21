package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/internal/hookrun"
	"github.com/servicewright/servicewright/internal/safe"
)

// run is the state of one Host.Run: what was started, so teardown undoes only that.
type run struct {
	h   *Host
	ctx context.Context // carries the caller's values; never cancelled by the Host

	stageStart time.Time
	stopAt     atomic.Int64 // when the stop came, in Unix ns; 0 before
	span       trace.Span
	spanCtx    atomic.Pointer[trace.SpanContext] // span's, for the lines logged from any goroutine
	phases     phaseSpans

	scopeOpen bool
	warmed    []Step   // steps whose Start succeeded, in start order
	bound     []*entry // entries whose Bind succeeded, in bind order
	wasReady  bool     // readiness turned true at least once
	hooksRan  bool     // startup reached pre_start: the shutdown hooks run
	complete  bool     // startup finished: the drain hooks run
	lc        lifecycle
	serve     *serveGroup // nil until the serve stage

	report report
}

// Run runs the service: startup (the container's OnStart hooks, warmup, pre_start
// hooks, Bind, readiness, post_start hooks), then Serve on every entrypoint until a
// stop is requested, then the orderly exit. It returns when the exit has finished.
//
// A stop is requested by cancelling ctx, by Shutdown().Begin (what the signal
// handlers of Main call), or by the failure of an essential entrypoint; all three
// cancel the one stop signal the Shutdown handle owns. A stop that arrives during
// startup is honoured at once: the warmup steps, the start hook or the Bind in
// progress has its ctx cancelled, the stages after it are skipped, readiness never
// turns true (or is withdrawn), and Run returns nil after cleanup. A step that
// ignores the cancellation is abandoned hooks.AbandonAfter later, still running (the
// start_unwind figure of WorstCase): the report names it under abandoned and
// overran, and the result is timeout.
//
// Run returns nil after a graceful exit; the *StartupError or *EntrypointError that
// caused the exit; an error wrapping fault.ErrInterrupted when a task (an
// entrypoint.Finite) was not done at the stop (task.go); or, when nothing else
// failed, an error wrapping ErrCleanupFailed if a cleanup step failed, or
// ErrShutdownTimeout if the exit overran a budget. ExitCode maps each to an exit
// code. Run may be called once.
func (h *Host) Run(ctx context.Context) error {
	h.mu.Lock()
	first := h.ran.CompareAndSwap(false, true)
	h.mu.Unlock()
	if !first {
		return errAlreadyRun
	}
	r := &run{h: h, ctx: context.WithoutCancel(ctx)}
	defer h.monitor.Stop() // the checks' background runs, started by postStart
	// The caller's ctx is one more way to request the stop.
	unbridge := context.AfterFunc(ctx, func() { h.shutdown.begin(false, context.Cause(ctx)) })
	defer unbridge()

	// work carries the caller's values and ends with the stop signal.
	stop := h.shutdown.stopping()
	work, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	unlink := context.AfterFunc(stop, func() { r.stopAt.Store(time.Now().UnixNano()); cancel(context.Cause(stop)) })
	defer unlink()

	cause := r.startup(work)
	if cause == nil && !r.stopping() {
		cause = r.serveUntilStop(work)
	}
	if cause == nil {
		cause = r.interrupted() // a task not done is never a success (task.go)
	}
	return r.teardown(cause)
}

// enter moves the Host to stage s: it ends the previous stage's span and duration,
// then records, traces and announces the new one.
func (r *run) enter(s Stage) {
	h := r.h
	now := time.Now()
	prev := Stage(h.stage.Swap(int32(s)))
	m := h.tel.metrics
	if r.span != nil {
		r.span.End()
		m.stageDuration.WithLabelValues(prev.String()).Set(now.Sub(r.stageStart).Seconds())
		r.report.stage(prev, now.Sub(r.stageStart))
	}
	m.stage.WithLabelValues(prev.String()).Set(0)
	m.stage.WithLabelValues(s.String()).Set(1)
	r.stageStart = now
	if s != StageStopped {
		_, r.span = h.tel.tracer.Start(r.stageParent(s), "servicewright."+s.String())
		sc := r.span.SpanContext()
		r.spanCtx.Store(&sc)
	} else {
		r.span = nil
		r.spanCtx.Store(nil)
	}
	r.log().Debug("stage", zap.Stringer("stage", s))
	if h.opts.observer != nil {
		h.opts.observer(Event{Stage: s, Readiness: h.Readiness(), At: now})
	}
}

// log is the Host's logger with the trace_id and span_id of the stage in progress,
// so that each line the Host writes during a stage is found from its trace (see
// LoggerFor). It is safe from any goroutine.
func (r *run) log() *zap.Logger {
	sc := r.spanCtx.Load()
	if sc == nil || !sc.IsValid() {
		return r.h.log
	}
	return r.h.log.With(zap.String("trace_id", sc.TraceID().String()), zap.String("span_id", sc.SpanID().String()))
}

// startup runs the startup stages from opening the container to the post_start
// hooks. It returns nil when it finished or when a stop arrived (a stop is never a
// failure); otherwise a *StartupError.
func (r *run) startup(ctx context.Context) error {
	h := r.h
	r.enter(StageBootstrap)
	// Logged here, not in New: entrypoints, checks and close steps added between New
	// and Run (plain wiring) are in the figures, and there is one line.
	h.logBudgets()
	if h.probe != nil {
		if err := h.probe.start(); err != nil {
			return &StartupError{Stage: StageBootstrap, Err: err}
		}
		r.log().Info("probe listener open", zap.String("addr", h.ProbeAddr()))
	}
	stages := []struct {
		stage Stage
		run   func(context.Context) error
	}{
		{StageOpenScope, r.openScope},
		{StageWarmup, r.warmup},
		{StagePreStart, r.preStart},
		{StageBind, r.bind},
		{StagePostStart, r.postStart},
	}
	for _, s := range stages {
		if r.stopping() {
			r.log().Info("stop requested during startup; skipping the rest", zap.Stringer("next_stage", s.stage))
			return nil
		}
		r.enter(s.stage)
		if err := s.run(ctx); err != nil {
			if errors.Is(err, fault.ErrAbandoned) && s.stage != StageWarmup { // warmupGroup names its own
				r.startAbandoned(err)
			}
			if r.stopping() {
				if at := r.stopAt.Load(); at > 0 {
					r.report.startUnwind = time.Since(time.Unix(0, at)) // the wait on the step the stop cut
				}
				r.log().Info("startup stage cut short by stop", zap.Stringer("stage", s.stage), zap.Error(err))
				return nil
			}
			r.log().Error("startup failed", zap.Stringer("stage", s.stage), zap.Error(err))
			return &StartupError{Stage: s.stage, Err: err}
		}
	}
	r.complete = true
	r.log().Info("service ready", append([]zap.Field{zap.Int("entrypoints", len(r.bound))}, runtimeFields()...)...)
	return nil
}

// startAbandoned records a startup step abandoned after its ctx ended (err names it
// and wraps fault.ErrAbandoned): it is still running, so the exit overran.
func (r *run) startAbandoned(err error) {
	what := strings.TrimSuffix(err.Error(), ": "+fault.ErrAbandoned.Error())
	r.log().Error("startup step ignored its cancellation; abandoned, still running",
		zap.String("step", what), zap.Duration("unwind", hooks.AbandonAfter))
	r.report.overran(what)
	r.report.abandon(what)
}

// stopping reports whether a stop has been requested.
func (r *run) stopping() bool { return r.h.shutdown.stopping().Err() != nil }

func (r *run) openScope(ctx context.Context) error {
	if r.h.scope == nil {
		return nil
	}
	if err := r.h.scope.Open(ctx); err != nil {
		return fmt.Errorf("open container: %w", err)
	}
	r.scopeOpen = true
	return nil
}

// warmup runs the steps in ascending priority groups; a group's members run
// concurrently and the first failure cancels the rest of its group.
func (r *run) warmup(ctx context.Context) error {
	ctx, cancel := context.WithTimeoutCause(ctx, r.h.budgets.WarmupTimeout, ErrWarmupTimeout)
	defer cancel()
	steps := r.warmupSteps()
	slices.SortStableFunc(steps, func(a, b Step) int { return cmp.Compare(a.Priority, b.Priority) })
	for len(steps) > 0 {
		n := 1
		for n < len(steps) && steps[n].Priority == steps[0].Priority {
			n++
		}
		group := steps[:n]
		steps = steps[n:]
		if err := r.warmupGroup(ctx, group); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) warmupGroup(ctx context.Context, group []Step) error {
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(group))
	var wg sync.WaitGroup
	for i, s := range group {
		wg.Go(func() {
			errs[i] = r.warmupStep(gctx, s) // warmupbudget.go
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	var first error
	for i, s := range group {
		if errors.Is(errs[i], fault.ErrAbandoned) {
			r.startAbandoned(errs[i])
		}
		if errs[i] == nil {
			r.warmed = append(r.warmed, s)
		} else if first == nil && !errors.Is(errs[i], context.Canceled) {
			first = fmt.Errorf("warmup %q: %w", s.Name, errs[i])
		}
	}
	if first == nil {
		for i, s := range group {
			if errs[i] != nil {
				first = fmt.Errorf("warmup %q: %w", s.Name, errs[i])
				break
			}
		}
	}
	return first
}

// preStart takes the lifecycle as it stands after warmup — with what the container
// and the warmup steps registered since New, validated — and runs its pre_start hooks.
func (r *run) preStart(ctx context.Context) error {
	r.hooksRan = true
	lc, err := r.h.settleLifecycle()
	r.lc = lc
	if err != nil {
		return err
	}
	return hookrun.Start(ctx, hooks.PreStart, r.tracedHooks(hooks.PreStart), r.h.log)
}

// bind calls Bind on each entrypoint in order. A stop cancels the ctx of the Bind in
// progress; one that has not returned hooks.AbandonAfter later is abandoned (its
// entrypoint is not bound: it is neither drained nor stopped).
func (r *run) bind(ctx context.Context) error {
	for _, e := range r.h.entries {
		if r.stopping() {
			return nil
		}
		err := safe.Bounded(ctx, fmt.Sprintf("entrypoint %q Bind", e.name), hooks.AbandonAfter, e.reg.Entrypoint.Bind)
		if errors.Is(err, fault.ErrAbandoned) {
			e.set(entryFailed)
			return err
		}
		if err != nil {
			e.set(entryFailed)
			return fmt.Errorf("entrypoint %q: %w", e.name, err)
		}
		e.set(entryBound)
		r.bound = append(r.bound, e)
	}
	return nil
}

func (r *run) postStart(ctx context.Context) error {
	h := r.h
	// The checks run in the background from now on; the probes read their results.
	// Ready waits for each one's first, so a failing gating check never shows ready.
	h.monitor.Start()
	if err := h.monitor.AwaitFirst(ctx); err != nil {
		return fmt.Errorf("first readiness checks: %w", err)
	}
	h.state.Set(health.StatusReady)
	r.wasReady = h.Readiness() == health.StatusReady
	if r.wasReady {
		h.tel.metrics.ready.Set(1)
	}
	return hookrun.Start(ctx, hooks.PostStart, r.tracedHooks(hooks.PostStart), h.log)
}

// serveUntilStop runs every bound entrypoint's Serve until a stop is requested. It
// returns the failure of an essential entrypoint, having begun the shutdown, or nil
// at a stop.
func (r *run) serveUntilStop(ctx context.Context) error {
	h := r.h
	r.enter(StageServe)
	r.serve = newServeGroup(r.ctx, ctx.Done(), len(r.bound))
	rs := newRestarts(len(r.bound)) // restart.go
	defer rs.stop()
	for _, e := range r.bound {
		e.set(entryServing)
		rs.began[e] = time.Now()
		r.serve.start(e)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-rs.due:
			r.restart(rs, e)
		case res := <-r.serve.results:
			r.serve.pending--
			if ctx.Err() != nil {
				r.servedAfterStop(res)
				return nil
			}
			if done, end := r.taskDone(res); done { // task.go
				if end {
					h.shutdown.Begin()
					return nil
				}
				continue
			}
			err := res.err
			if err == nil {
				err = entrypoint.ErrReturnedEarly
			}
			res.e.set(entryFailed)
			if !rs.refused(res.e, err) { // a refused restart is the same failure, not a new one
				h.tel.metrics.failures.WithLabelValues(res.e.name).Inc()
			}
			if !essential(res.e) {
				r.serveFailed(rs, res.e, err)
				continue
			}
			r.log().Error("essential entrypoint failed; shutting down",
				zap.String("entrypoint", res.e.name), zap.Error(err))
			h.shutdown.Begin()
			return &EntrypointError{Entrypoint: res.e.name, Err: err}
		}
	}
}

// servedAfterStop records a Serve that returned after the stop: the normal case.
func (r *run) servedAfterStop(res serveResult) {
	if res.e.get() == entryServing {
		res.e.set(entryBound)
	}
	if res.err != nil {
		r.log().Warn("entrypoint Serve returned an error at stop",
			zap.String("entrypoint", res.e.name), zap.Error(res.err))
	}
}
