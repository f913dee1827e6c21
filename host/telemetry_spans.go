package host

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
)

// unit wraps fn, one unit of the lifecycle (a warmup step, a hook, a drain phase, an
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

// hooks returns the hooks of kind, each traced. A panic in a shutdown hook is
// reported where it happens; one in a start hook is reported as the startup failure
// it becomes.
func (r *run) hooks(kind hooks.Kind) []hooks.Hook {
	hs := r.h.lifecycle.Hooks(kind)
	shutdown := kind == hooks.PreShutdown || kind == hooks.PostShutdown
	for i, hk := range hs {
		hs[i].Run = r.unit(fmt.Sprintf("%s hook %q", kind, hk.Name), shutdown, hk.Run)
	}
	return hs
}

// drainPhases returns the drain phases, each traced and its panics reported.
func (r *run) drainPhases() []hooks.DrainPhase {
	ps := r.h.lifecycle.DrainPhases()
	for i, p := range ps {
		run := p.Run
		var allowed time.Duration
		traced := r.unit(fmt.Sprintf("drain phase %q", p.Name), true, func(ctx context.Context) error { return run(ctx, allowed) })
		ps[i].Run = func(ctx context.Context, a time.Duration) error {
			allowed = a
			return traced(ctx)
		}
	}
	return ps
}
