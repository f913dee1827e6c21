// Package safe runs user code so that a panic becomes an error naming its source, and
// so that a call that outlives its deadline can be abandoned instead of awaited.
package safe

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
)

// PanicError is the error a recovered panic becomes.
type PanicError struct {
	What  string // what panicked, e.g. `entrypoint "http" Serve`
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack
}

func (e *PanicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.What, e.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is sees through it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Call runs fn and turns a panic into a *PanicError naming what.
func Call(what string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{What: what, Value: v, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// ErrAbandoned is returned by Bounded when fn did not return within its allowance.
var ErrAbandoned = fmt.Errorf("abandoned: did not return in time")

// Bounded runs fn in its own goroutine with ctx and waits for it to return, but no
// longer than until ctx is done plus extra. When the wait ends first it returns
// ErrAbandoned wrapped with what; fn's goroutine is left to finish on its own, and
// its eventual result is discarded. A panic in fn becomes a *PanicError.
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
		return fmt.Errorf("%s: %w", what, ErrAbandoned)
	}
}
