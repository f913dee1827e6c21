// Package safe runs user code so that a panic becomes an error naming its source, and
// so that a call that outlives its deadline can be abandoned instead of awaited; and
// it reads the files a configuration names bounded (ReadFile): regular files only,
// never a blocking open, never more than a cap.
package safe

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// Call runs fn and turns a panic into a *fault.PanicError naming what.
func Call(what string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &fault.PanicError{What: what, Value: v, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// Bounded runs fn in its own goroutine with ctx and waits for it to return, but no
// longer than until ctx is done plus extra. When the wait ends first it returns
// ErrAbandoned wrapped with what; fn's goroutine is left to finish on its own, and
// its eventual result is discarded. A panic in fn becomes a *fault.PanicError.
func Bounded(ctx context.Context, what string, extra time.Duration, fn func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- Call(what, func() error { return fn(ctx) }) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	t := time.NewTimer(extra)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%s: %w", what, fault.ErrAbandoned)
	}
}

// ReportPanic sends err to r when it is or wraps a *fault.PanicError, tagged with the
// entrypoint called name, and reports whether it did; a nil r sends nothing. It is
// how every entrypoint hands a panic it recovered on its own to the error reporter
// (entrypoint.Telemetry.Reporter); ctx may carry the span the report is tied to.
func ReportPanic(ctx context.Context, r fault.Reporter, name string, err error) bool {
	if r == nil {
		return false
	}
	if _, ok := errors.AsType[*fault.PanicError](err); !ok {
		return false
	}
	r.Report(ctx, err, map[string]string{fault.TagEntrypoint: name})
	return true
}
