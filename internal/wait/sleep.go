package wait

import (
	"context"
	"time"
)

// Sleep waits d and reports true, or reports false as soon as quit is closed,
// including when it is closed already. A nil quit is never closed. Background loops
// use it between units, so a stop never waits out an interval.
func Sleep(d time.Duration, quit <-chan struct{}) bool {
	ok, _ := SleepOrWake(d, quit, nil)
	return ok
}

// SleepOrWake is Sleep that a wake-up may cut short: it reports ok = true when d has
// passed or, with woken = true, as soon as wake delivers a value or is closed; and
// ok = false as soon as quit is closed, including when it is closed already. A d of
// zero or less returns at once and leaves wake alone. A nil wake never wakes.
func SleepOrWake(d time.Duration, quit, wake <-chan struct{}) (ok, woken bool) {
	select {
	case <-quit:
		return false, false
	default:
	}
	if d <= 0 {
		return true, false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-quit:
		return false, false
	case <-t.C:
		return true, false
	case <-wake:
		return true, true
	}
}

// SleepCtx is Sleep interrupted by ctx: it reports false as soon as ctx is done.
func SleepCtx(ctx context.Context, d time.Duration) bool {
	return Sleep(d, ctx.Done())
}

// For waits at most d for done to be closed and reports whether it was. A d of zero
// or less only looks.
func For(done <-chan struct{}, d time.Duration) bool {
	select {
	case <-done:
		return true
	default:
	}
	return !Sleep(d, done)
}

// Await waits until done is closed and returns nil, or returns ctx.Err() if ctx is
// done first. A done closed already wins over a ctx done already. A nil done means
// there is nothing to wait for: it returns nil at once.
func Await(ctx context.Context, done <-chan struct{}) error {
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
