package wait

import (
	"context"
	"errors"
	"fmt"

	"github.com/servicewright/servicewright/fault"
)

// ServeUntil is the tail of an entrypoint's Serve that has started background work
// of its own (a loop, a schedule, a campaign, a transport's accept loop). It returns
// nil when stop closes — the work goes on, still accepting, until Drain ends it — or
// when ended closes, because Drain or Stop came before the stop (or the work ended
// on its own: the caller tells which once ServeUntil returned).
//
// If ctx is done first, the Host has given up on the entrypoint. This is the one rule
// every entrypoint follows then: ServeUntil calls halt, which must cut the work off
// without waiting and return the channel closed once it has exited (a nil one is not
// waited for), waits for that channel at most AbandonAfter, and returns
// ctx.Err() — joined, when the work did not exit in time, with an error wrapping
// fault.ErrAbandoned that names what, e.g. `entrypoint "api" http.Server`. It never
// waits without limit.
func ServeUntil(ctx context.Context, what string, stop, ended <-chan struct{}, halt func() <-chan struct{}) error {
	select {
	case <-stop:
		return nil
	case <-ended:
		return nil
	case <-ctx.Done():
		if exited := halt(); exited != nil && !For(exited, AbandonAfter) {
			return errors.Join(ctx.Err(), fmt.Errorf("%s did not exit within %s of the Host giving up: %w",
				what, AbandonAfter, fault.ErrAbandoned))
		}
		return ctx.Err()
	}
}
