package leader

import (
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"fmt"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/internal/wait"
)

// call runs fn in a goroutine owned by t, with a ctx cut off after d, and returns its
// result, or an error wrapping the ctx's error as soon as that ctx is done, even
// when fn ignores it (fn's goroutine then finishes on its own). A panic in fn
// becomes a *fault.PanicError naming what.
func call[T any](t *wait.Group, ctx context.Context, d time.Duration, what string, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	t.Go(func() {
		var r result
		r.err = safe.Call(what, func() (err error) {
			r.v, err = fn(ctx)
			return err
		})
		ch <- r
	})
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-ch:
			return r.v, r.err
		default:
		}
		var zero T
		return zero, fmt.Errorf("%s: no answer within %v: %w", what, d, ctx.Err())
	}
}

// do is call for functions without a value.
func do(t *wait.Group, ctx context.Context, d time.Duration, what string, fn func(context.Context) error) error {
	_, err := call(t, ctx, d, what, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

// isFatal reports whether err is one no retry can clear: a *fault.ConfigError, an
// error marked by fault.Permanent, or a fencing refusal.
func isFatal(err error) bool {
	if err == nil {
		return false
	}
	var ce *fault.ConfigError
	return fault.IsPermanent(err) || errors.As(err, &ce) ||
		errors.Is(err, lock.ErrFenceExhausted) || errors.Is(err, lock.ErrFenceOutOfRange)
}

func isUnsupported(err error) bool { return errors.Is(err, errors.ErrUnsupported) }

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
