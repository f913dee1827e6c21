package host

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
)

// unit wraps fn, one unit of the lifecycle (a warmup step, a hook, a drain hook, an
// entrypoint's Drain, a cleanup step), so that it runs inside a span named what, a
// child of the current stage's span. An error or a panic marks the span failed; with
// report, a panic is also sent to the error reporter, with its stack, before it goes
// on to the caller's recover.
//
// Call it where the stage is entered: the parent is the stage's span at the time of
// the call, not of the unit's run.
func (r *run) unit(what string, report bool, fn func(context.Context) error) func(context.Context) error {
	parent, t := r.span, r.h.tel
	return func(ctx context.Context) (err error) {
		if parent != nil {
			ctx = trace.ContextWithSpan(ctx, parent)
		}
		ctx, span := t.tracer.Start(ctx, what)
		defer func() {
			if v := recover(); v != nil {
				pe := &fault.PanicError{What: what, Value: v, Stack: debug.Stack()}
				span.RecordError(pe)
				span.SetStatus(codes.Error, pe.Error())
				if report {
					r.h.tel.report(ctx, pe, Stage(r.h.stage.Load()), "")
				}
				span.End()
				panic(v)
			}
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}()
		return fn(ctx)
	}
}

// warmupSteps returns the service's warmup steps with each Start traced.
func (r *run) warmupSteps() []Step {
	steps := make([]Step, len(r.h.steps))
	for i, s := range r.h.steps {
		s.Start = r.unit(fmt.Sprintf("warmup %q", s.Name), false, s.Start)
		steps[i] = s
	}
	return steps
}

// tracedHooks returns the run's hooks of kind, each traced. A panic in a shutdown hook is
// reported where it happens; one in a start hook is reported as the startup failure
// it becomes.
func (r *run) tracedHooks(kind hooks.Kind) []hooks.Hook {
	hs := slices.Clone(r.lc.hooks[kind])
	shutdown := kind == hooks.PreShutdown || kind == hooks.PostShutdown
	for i, hk := range hs {
		hs[i].Run = r.unit(fmt.Sprintf("%s hook %q", kind, hk.Name), shutdown, hk.Run)
	}
	return hs
}

// drainPhases returns the run's drain hooks, each traced and its panics reported.
func (r *run) drainPhases() []hooks.DrainHook {
	ps := slices.Clone(r.lc.phases)
	for i, p := range ps {
		run := p.Run
		var allowed time.Duration
		traced := r.unit(fmt.Sprintf("drain hook %q", p.Name), true, func(ctx context.Context) error { return run(ctx, allowed) })
		ps[i].Run = func(ctx context.Context, a time.Duration) error {
			allowed = a
			return traced(ctx)
		}
	}
	return ps
}

// phaseSpans are the roots that gather the stages' spans into two traces: one for the
// startup, one for the exit. Serve, which may last for weeks, is a trace of its own.
type phaseSpans struct {
	startup, shutdown trace.Span
}

// stageParent returns the ctx the span of stage s starts from, starting or ending
// the phase roots as the stages go by. The exit's root ends as flush begins, so that
// it is exported with everything under it; flush and what follows are roots of their
// own, and are not exported.
func (r *run) stageParent(s Stage) context.Context {
	p, t := &r.phases, r.h.tel
	switch {
	case s < StageServe:
		if p.startup == nil {
			_, p.startup = t.tracer.Start(r.ctx, "servicewright.startup")
		}
		return trace.ContextWithSpan(r.ctx, p.startup)
	case s == StageServe:
		endSpan(&p.startup)
		return r.ctx
	case s < StageFlush:
		endSpan(&p.startup)
		if p.shutdown == nil {
			_, p.shutdown = t.tracer.Start(r.ctx, "servicewright.shutdown")
		}
		return trace.ContextWithSpan(r.ctx, p.shutdown)
	default:
		endSpan(&p.startup)
		endSpan(&p.shutdown)
		return r.ctx
	}
}

func endSpan(s *trace.Span) {
	if *s != nil {
		(*s).End()
		*s = nil
	}
}
