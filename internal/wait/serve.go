package wait

import "context"

// ServeUntil is the tail of an entrypoint's Serve that has started background work
// of its own (a loop, a schedule, a campaign). It returns nil when stop closes — the
// work goes on, still accepting, until Drain ends it — or when ended closes, because
// Drain or Stop came before the stop.
//
// If ctx is done first, the Host has given up on the entrypoint: ServeUntil calls
// halt, which must stop the work and return the channel closed once it has exited,
// waits for that channel (a nil one is not waited for) and returns ctx.Err().
func ServeUntil(ctx context.Context, stop, ended <-chan struct{}, halt func() <-chan struct{}) error {
	select {
	case <-stop:
		return nil
	case <-ended:
		return nil
	case <-ctx.Done():
		if exited := halt(); exited != nil {
			<-exited
		}
		return ctx.Err()
	}
}
