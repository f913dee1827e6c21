package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/internal/safe"
)

// run is the state of one Host.Run: what was started, so teardown undoes only that.
type run struct {
	h   *Host
	ctx context.Context // carries the caller's values; never cancelled by the Host

	stageStart time.Time
	span       trace.Span
	phases     phaseSpans

	scopeOpen bool
	warmed    []Step   // steps whose Start succeeded, in start order
	bound     []*entry // entries whose Bind succeeded, in bind order
	wasReady  bool

	serveCtx    context.Context
	cancelServe context.CancelFunc
	serveWG     sync.WaitGroup
	served      chan serveResult
	pending     int // Serve calls not yet returned

	report report
}

type serveResult struct {
	e   *entry
	err error
}

// Run runs the service: startup (the container's OnStart hooks, warmup, pre_start
// hooks, Bind, readiness, post_start hooks), then Serve on every entrypoint until a
// stop is requested, then the orderly exit. It returns when the exit has finished.
//
// A stop is requested by cancelling ctx, by Shutdown().Begin (what the signal
// handlers of Main call), or by the failure of an essential entrypoint. A stop that
// arrives during startup is honoured at the next stage boundary: a warmup step in
// progress is cancelled through its ctx, Bind is skipped, readiness never turns true,
// and Run returns nil after cleanup.
//
// Run returns nil after a graceful exit; the *StartupError or *EntrypointError that
// caused the exit; or, when nothing else failed, an error wrapping
// ErrShutdownTimeout if the exit overran a budget. ExitCode maps each to an exit code.
// Run may be called once.
func (h *Host) Run(ctx context.Context) error {
	if !h.ran.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	r := &run{h: h, ctx: context.WithoutCancel(ctx)}

	// stopCtx is cancelled when a stop is requested, whatever its source.
	stopCtx, cancelStop := context.WithCancel(r.ctx)
	defer cancelStop()
	finished := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		select {
		case <-ctx.Done():
			h.shutdown.Begin()
		case <-h.shutdown.Started():
		case <-finished:
			return
		}
		cancelStop()
	})
	defer watcher.Wait()
	defer close(finished)

	cause := r.startup(stopCtx)
	if cause == nil && !r.stopping(stopCtx) {
		cause = r.serve(stopCtx)
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
	} else {
		r.span = nil
	}
	h.log.Debug("stage", zap.Stringer("stage", s))
	if h.opts.observer != nil {
		h.opts.observer(Event{Stage: s, Readiness: h.state.Status(), At: now})
	}
}

// startup runs startup stages 3–7 of the sequence. It returns nil when it finished or
// when a stop arrived (a stop is never a failure); otherwise a *StartupError.
func (r *run) startup(ctx context.Context) error {
	h := r.h
	r.enter(StageBootstrap)
	if h.probe != nil {
		if err := h.probe.Start(); err != nil {
			return &StartupError{Stage: StageBootstrap, Err: err}
		}
		h.log.Info("probe listener open", zap.String("addr", h.ProbeAddr()))
	}
	stages := []struct {
		stage Stage
		run   func(context.Context) error
	}{
		{StageOpenScope, r.openScope},
		{StageWarmup, r.warmup},
		{StagePreStart, func(ctx context.Context) error {
			return hooks.RunStart(ctx, hooks.PreStart, r.hooks(hooks.PreStart), h.log)
		}},
		{StageBind, r.bind},
		{StagePostStart, r.postStart},
	}
	for _, s := range stages {
		if r.stopping(ctx) {
			h.log.Info("stop requested during startup; skipping the rest", zap.Stringer("next_stage", s.stage))
			return nil
		}
		r.enter(s.stage)
		if err := s.run(ctx); err != nil {
			if r.stopping(ctx) {
				h.log.Info("startup stage cut short by stop", zap.Stringer("stage", s.stage), zap.Error(err))
				return nil
			}
			h.log.Error("startup failed", zap.Stringer("stage", s.stage), zap.Error(err))
			return &StartupError{Stage: s.stage, Err: err}
		}
	}
	h.log.Info("service ready", zap.Int("entrypoints", len(r.bound)))
	return nil
}

// stopping reports whether a stop has been requested. It reads the shutdown handle
// as well as ctx, so a stop requested by a hook is seen at the very next boundary.
func (r *run) stopping(ctx context.Context) bool {
	select {
	case <-r.h.shutdown.Started():
		return true
	default:
		return ctx.Err() != nil
	}
}

func (r *run) openScope(ctx context.Context) error {
	if r.h.app == nil {
		return nil
	}
	if err := r.h.app.Start(ctx); err != nil {
		return fmt.Errorf("open container: %w", err)
	}
	r.scopeOpen = true
	return nil
}

// warmup runs the steps in ascending priority groups; a group's members run
// concurrently and the first failure cancels the rest of its group.
func (r *run) warmup(ctx context.Context) error {
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
			errs[i] = safe.Call(fmt.Sprintf("warmup %q", s.Name), func() error { return s.Start(gctx) })
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	var first error
	for i, s := range group {
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

func (r *run) bind(ctx context.Context) error {
	for _, e := range r.h.entries {
		if r.stopping(ctx) {
			return nil
		}
		err := safe.Call(fmt.Sprintf("entrypoint %q Bind", e.name), func() error { return e.reg.Entrypoint.Bind(ctx) })
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
	h.state.Set(health.Ready)
	r.wasReady = h.state.Status() == health.Ready
	if r.wasReady {
		h.tel.metrics.ready.Set(1)
	}
	return hooks.RunStart(ctx, hooks.PostStart, r.hooks(hooks.PostStart), h.log)
}

// serve runs every bound entrypoint's Serve until a stop is requested. It returns the
// failure of an essential entrypoint, having begun the shutdown, or nil at a stop.
func (r *run) serve(stop context.Context) error {
	h := r.h
	r.enter(StageServe)
	r.serveCtx, r.cancelServe = context.WithCancel(r.ctx)
	r.served = make(chan serveResult, len(r.bound))
	for _, e := range r.bound {
		e.set(entryServing)
		r.pending++
		r.serveWG.Go(func() {
			err := safe.Call(fmt.Sprintf("entrypoint %q Serve", e.name), func() error {
				return e.reg.Entrypoint.Serve(r.serveCtx, stop.Done())
			})
			r.served <- serveResult{e, err}
		})
	}
	for {
		select {
		case <-stop.Done():
			return nil
		case res := <-r.served:
			r.pending--
			if stop.Err() != nil {
				r.servedAfterStop(res)
				return nil
			}
			err := res.err
			if err == nil {
				err = ErrServeReturned
			}
			res.e.set(entryFailed)
			h.tel.metrics.failures.WithLabelValues(res.e.name).Inc()
			if res.e.reg.NonEssential {
				r.failed(&EntrypointError{Entrypoint: res.e.name, Err: err})
				h.log.Error("non-essential entrypoint failed; the others keep serving",
					zap.String("entrypoint", res.e.name), zap.Error(err))
				continue
			}
			h.log.Error("essential entrypoint failed; shutting down",
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
		r.h.log.Warn("entrypoint Serve returned an error at stop",
			zap.String("entrypoint", res.e.name), zap.Error(res.err))
	}
}
