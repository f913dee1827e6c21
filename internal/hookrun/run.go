package hookrun

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/internal/safe"
)

// Start runs hs one after the other, in order, each with ctx, and stops at the first
// failure (fail-fast).
//
// Before each hook it checks ctx: when ctx is done it returns ctx.Err() wrapped as
// `<kind> hook "<name>": …`, naming the first hook not run. A hook's error is returned
// wrapped the same way. A panic is recovered and returned as a *fault.PanicError whose
// What is `<kind> hook "<name>"`, so its message names the hook as well; it is not
// wrapped a second time. The hooks after a failure are not run.
//
// A hook has no time limit of its own while ctx lives, but once ctx is done (a stop
// during startup) the hook running is given hooks.AbandonAfter to return, as a
// warmup step is; one still running then is abandoned — its goroutine is left to
// finish on its own, its result discarded — and Start returns an error wrapping
// fault.ErrAbandoned that names it. So Start returns within hooks.AbandonAfter of
// ctx ending. It does not log failures, which are the caller's to report; each
// success is logged at debug level. A nil log is allowed.
func Start(ctx context.Context, kind hooks.Kind, hs []hooks.Hook, log *zap.Logger) error {
	log = orNop(log)
	for _, h := range hs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s hook %q: %w", kind, h.Name, err)
		}
		what := hookWhat(kind, h.Name)
		start := time.Now()
		f, err := bounded(ctx, what, hooks.AbandonAfter, h.Run)
		switch {
		case f == nil: // a *fault.PanicError or an abandonment, already naming the hook
			return err
		case err != nil:
			return fmt.Errorf("%s: %w", what, err)
		}
		log.Debug("hook done", zap.Stringer("kind", kind), zap.String("hook", h.Name),
			zap.Duration("took", time.Since(start)))
	}
	return nil
}

// ShutdownUnwind is how long the Host still waits for a shutdown hook after its
// StepTimeout has cancelled its ctx, before abandoning it, so a hook that honours ctx
// reports its own error instead of being called abandoned. The worst case counts
// StepTimeout + ShutdownUnwind per hook (docs/budgets.md states it).
const ShutdownUnwind = 100 * time.Millisecond

// Shutdown runs every hook in hs, in order, even when earlier ones fail
// (best-effort), and returns errors.Join of their failures.
//
// Each hook gets its own ctx: context.WithoutCancel(ctx) — so a cancelled or forced
// shutdown does not cut it short — with timeout as its deadline. A hook still running
// ShutdownUnwind after its deadline is abandoned: its goroutine is left to finish on
// its own, its result is discarded, and the next hook runs. So Shutdown returns
// within len(hs) × (timeout + ShutdownUnwind). timeout should be positive (the Host
// validates it); with timeout ≤ 0 each hook starts with its ctx already done.
//
// Each failure is logged with the hook's name and joined into the result: a returned
// error wrapped as `<kind> hook "<name>": …`, a panic as a *fault.PanicError and an
// abandoned hook as an error wrapping fault.ErrAbandoned, both of which already carry
// that prefix. errors.Is and errors.As see every one. A nil log is allowed.
//
// Shutdown does not retry a hook, and cannot stop an abandoned one.
func Shutdown(ctx context.Context, kind hooks.Kind, hs []hooks.Hook, timeout time.Duration, log *zap.Logger) error {
	log = orNop(log)
	base := context.WithoutCancel(ctx)
	var errs []error
	for _, h := range hs {
		what := hookWhat(kind, h.Name)
		hctx, cancel := context.WithTimeout(base, timeout)
		start := time.Now()
		f, err := bounded(hctx, what, ShutdownUnwind, h.Run)
		cancel()
		fields := []zap.Field{zap.Stringer("kind", kind), zap.String("hook", h.Name),
			zap.Duration("took", time.Since(start))}
		switch {
		case f == nil && isPanic(err):
			log.Error("hook panicked", append(fields, zap.Error(err))...)
		case f == nil:
			log.Error("hook abandoned", append(fields, zap.Duration("timeout", timeout), zap.Error(err))...)
		case f.err != nil:
			err = fmt.Errorf("%s: %w", what, f.err)
			log.Error("hook failed", append(fields, zap.Error(err))...)
		default:
			log.Debug("hook done", fields...)
			continue
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func isPanic(err error) bool {
	var pe *fault.PanicError
	return errors.As(err, &pe)
}

func hookWhat(kind hooks.Kind, name string) string { return fmt.Sprintf("%s hook %q", kind, name) }

func orNop(log *zap.Logger) *zap.Logger {
	if log == nil {
		return zap.NewNop()
	}
	return log
}

// finish is how a bounded call returned on its own.
type finish struct {
	err   error // what it returned
	cause error // context.Cause of its ctx when it returned; nil if ctx was not done
}

// bounded runs fn through safe.Bounded and tells apart its three endings: fn returned
// (f != nil, err is fn's own error), fn panicked (f == nil, err is a *fault.PanicError),
// or fn was abandoned (f == nil, err wraps fault.ErrAbandoned). The distinction does not
// rely on the error's identity, so fn may itself return a PanicError or ErrAbandoned.
// A return that races the abandonment by a hair counts as a return.
func bounded(ctx context.Context, what string, extra time.Duration, fn func(context.Context) error) (*finish, error) {
	var out atomic.Pointer[finish]
	err := safe.Bounded(ctx, what, extra, func(ctx context.Context) error {
		e := fn(ctx)
		out.Store(&finish{err: e, cause: context.Cause(ctx)})
		return e
	})
	if f := out.Load(); f != nil {
		return f, f.err
	}
	return nil, err
}
