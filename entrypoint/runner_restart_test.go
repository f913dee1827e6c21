package entrypoint_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/servicewright/servicewright/entrypoint"
)

// After its work failed, a Runner serves again when Serve is called again (the
// Host's restart of a non-essential entrypoint); after Drain it starts nothing.
func TestRunnerServesAgainAfterAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := entrypoint.NewRunner("relay")
		if err := r.Bind(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		runs := 0
		work := func(ctx context.Context, draining <-chan struct{}) error {
			runs++
			if runs == 1 {
				return errors.New("backend gone")
			}
			<-draining
			return nil
		}
		if err := r.Serve(t.Context(), stop, work); err == nil || err.Error() != "backend gone" {
			t.Fatalf("first Serve = %v, want the work's error", err)
		}
		served := make(chan error, 1)
		go func() { served <- r.Serve(t.Context(), stop, work) }()
		synctest.Wait()
		if runs != 2 || r.InFlight() != 0 {
			t.Fatalf("after the second Serve: %d runs, in flight %d; want the work running again, idle", runs, r.InFlight())
		}
		close(stop)
		if err := <-served; err != nil {
			t.Fatalf("second Serve = %v, want nil at the stop", err)
		}
		if err := r.Drain(t.Context()); err != nil {
			t.Fatalf("Drain = %v, want nil: the restarted work ended cleanly", err)
		}
		if err := r.Serve(t.Context(), stop, work); err != nil || runs != 2 {
			t.Fatalf("Serve after Drain = %v with %d runs, want nil and nothing started", err, runs)
		}
	})
}
