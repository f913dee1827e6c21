package entrypoint

import (
	"context"
	"errors"
	"time"
)

// spreadTick is the least time Spread sleeps between two closings: items due within
// the same tick are closed together, so a spread over many items wakes at most once
// per tick rather than once per item.
const spreadTick = 10 * time.Millisecond

// spreadTailMax caps the time Spread leaves free before ctx's deadline.
const spreadTailMax = 500 * time.Millisecond

// Spread closes long-lived connections or streams a few at a time, evenly over a
// window, so that their clients reconnect elsewhere gradually rather than all at once
// onto the remaining replicas. It calls end once on each item, in the order given.
//
// Item i of n is closed at i×w/n after the call, where w is window, shortened when
// ctx has a deadline so that the last item is closed a tenth of the time left (at
// most half a second) before it, leaving what end started a moment to finish. Items
// due within the same 10ms tick are closed together. A window of zero or less closes
// everything at once.
//
// Spread returns nil once end has been called on every item, whatever ctx does
// afterwards: a spread that finished is never reported as a timeout. If ctx is done
// before the last item was due, Spread calls end on the remaining items at once (so
// nothing is left open by the spread) and returns ctx.Err().
//
// end runs on the caller's goroutine and should not block: a slow end delays the
// items after it. Spread does not wait for what end starts (a handler returning, a
// goodbye frame being sent); the caller waits for that its own way.
func Spread[T any](ctx context.Context, window time.Duration, items []T, end func(T)) error {
	n := len(items)
	if n == 0 {
		return nil
	}
	window = spreadWindow(ctx, window)
	start := time.Now()
	var t *time.Timer
	for i := 0; ; {
		elapsed := time.Since(start)
		for i < n && spreadSlot(i, n, window) <= elapsed {
			end(items[i])
			i++
		}
		if i == n {
			return nil
		}
		if err := ctx.Err(); err != nil {
			for _, it := range items[i:] {
				end(it)
			}
			return err
		}
		wait := max(spreadSlot(i, n, window)-elapsed, spreadTick)
		if t == nil {
			t = time.NewTimer(wait)
			defer t.Stop()
		} else {
			t.Reset(wait)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// spreadSlot is when item i of n is due within window.
func spreadSlot(i, n int, window time.Duration) time.Duration {
	return time.Duration(float64(window) * float64(i) / float64(n))
}

// spreadWindow shortens window to end a tenth of the time left before ctx's deadline
// (at most spreadTailMax) early; never below zero.
func spreadWindow(ctx context.Context, window time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		window = min(window, left-min(left/10, spreadTailMax))
	}
	return max(window, 0)
}

// ErrStreamDrained is the context.Cause of a long-lived request's ctx (a stream, a
// server-streaming RPC) when its server ends it: the spread drain reached it, or Stop
// cut it. httpentry and grpcentry end their streams with it.
var ErrStreamDrained = errors.New("entrypoint: stream closed by the server's drain")
