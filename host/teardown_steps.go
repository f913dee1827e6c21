package host

// The steps the teardown runs one by one, each time-boxed: shutdown hooks and the scope's steps.

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/internal/hookrun"
	"github.com/servicewright/servicewright/internal/safe"
)

// shutdownHooks runs the shutdown hooks of kind, each under StepTimeout; a failing one is a
// failure of the exit, one that overran its timeout a timeout.
func (r *run) shutdownHooks(kind hooks.Kind) {
	h := r.h
	err := hookrun.Shutdown(r.ctx, kind, r.tracedHooks(kind), h.budgets.StepTimeout, h.log)
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		switch {
		case e == nil:
		case errors.Is(e, fault.ErrAbandoned), errors.Is(e, context.DeadlineExceeded):
			r.report.overran(e.Error())
		default:
			r.report.errs(kind.String(), e)
		}
	}
}

// step runs one cleanup step under StepTimeout; the next step runs either way. A step
// that returns after its timeout, with or without an error, overran it; one that does
// not return within the courtesy after it is abandoned; an error before it is a
// failure.
func (r *run) step(what string, fn func(context.Context) error) error {
	h := r.h
	ctx, cancel := context.WithTimeout(r.ctx, h.budgets.StepTimeout)
	defer cancel()
	err := safe.Bounded(ctx, what, courtesy, r.unit(what, true, fn))
	switch {
	case errors.Is(err, fault.ErrAbandoned):
		r.log().Error("step abandoned after its timeout", zap.String("step", what), zap.Duration("timeout", h.budgets.StepTimeout))
		r.report.overran(what)
		r.report.abandon(what)
	case ctx.Err() != nil:
		r.log().Error("step overran its timeout", zap.String("step", what), zap.Duration("timeout", h.budgets.StepTimeout), zap.Error(err))
		r.report.overran(what)
		if err == nil {
			err = context.DeadlineExceeded
		}
	case err != nil:
		r.log().Error("step failed", zap.String("step", what), zap.Error(err))
		r.report.errs(what, err)
	}
	return err
}

// ctxErr reports whether err is, or wraps, a ctx's own ending.
func ctxErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

func inFlight(e *entry) int {
	if f := e.caps.InFlight; f != nil {
		return f.InFlight()
	}
	return 0
}
