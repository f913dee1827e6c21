package entrypoint

import (
	"context"
	"time"

	"github.com/servicewright/servicewright/internal/wait"
)

// ServeUntil is the tail of a Serve that has started background work of its own (a
// loop, a schedule, a campaign). It returns nil when stop closes — the work goes on,
// still accepting, until Drain ends it — or when ended closes, because Drain or Stop
// came before the stop. If ctx is done first, the Host has given up on the
// entrypoint: ServeUntil calls halt, waits for exited (the background work's end)
// and returns ctx.Err().
func ServeUntil(ctx context.Context, stop, ended, exited <-chan struct{}, halt func()) error {
	select {
	case <-stop:
		return nil
	case <-ended:
		return nil
	case <-ctx.Done():
		halt()
		<-exited
		return ctx.Err()
	}
}

// Await waits until done is closed and returns nil, or returns ctx.Err() if ctx is
// done first. A nil done means there is nothing to wait for: it returns nil at once.
// Drain and Stop use it to wait for background work within their ctx.
func Await(ctx context.Context, done <-chan struct{}) error { return wait.Await(ctx, done) }

// Sleep waits d and reports true, or reports false as soon as quit is closed —
// including when it is closed already. Background loops use it between units, so a
// Drain never waits out an interval.
func Sleep(d time.Duration, quit <-chan struct{}) bool { return wait.Sleep(d, quit) }
