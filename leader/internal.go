package leader

import (
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// tracker owns goroutines and lets their owner wait for all of them, with a deadline.
// Unlike a sync.WaitGroup, its Wait can give up.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0
}

// Go runs f in a goroutine the tracker counts.
func (t *tracker) Go(f func()) {
	t.mu.Lock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
	go func() {
		defer t.exit()
		f()
	}()
}

func (t *tracker) exit() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n--; t.n == 0 {
		close(t.idle)
	}
}

// Wait returns nil once no goroutine runs, or ctx.Err() when ctx is done first.
func (t *tracker) Wait(ctx context.Context) error {
	for {
		t.mu.Lock()
		n, idle := t.n, t.idle
		t.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// call runs fn in a goroutine owned by t, with a ctx cut off after d, and returns its
// result, or an error wrapping the ctx's error as soon as that ctx is done, even
// when fn ignores it (fn's goroutine then finishes on its own). A panic in fn
// becomes a *fault.PanicError naming what.
func call[T any](t *tracker, ctx context.Context, d time.Duration, what string, fn func(context.Context) (T, error)) (T, error) {
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
func do(t *tracker, ctx context.Context, d time.Duration, what string, fn func(context.Context) error) error {
	_, err := call(t, ctx, d, what, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

// isFatal reports whether err is one no retry can clear: a configuration error, or a
// fencing refusal.
func isFatal(err error) bool {
	if err == nil {
		return false
	}
	var ce *fault.ConfigError
	return errors.Is(err, ErrConfig) || errors.As(err, &ce) ||
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
