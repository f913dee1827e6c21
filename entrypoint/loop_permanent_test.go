package entrypoint

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// A unit that fails with fault.Permanent is not retried: the loop ends and Serve
// returns the error, still marked, while an unmarked failure keeps backing off.
func TestLoopStopsOnPermanent(t *testing.T) {
	t.Run("Serve returns the permanent failure and no unit runs again", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			bad := errors.New("the sweep's table is gone")
			unit := func(context.Context) error {
				if rec.mark() == 2 {
					return fault.Permanent(bad)
				}
				return nil
			}
			s := serve(t, mustLoop(t, LoopConfig{Name: "sweeper", Every: time.Second}, unit))
			var err error
			select {
			case err = <-s.served:
			case <-time.After(time.Hour):
				t.Fatal("Serve did not return within an hour of virtual time")
			}
			if !fault.IsPermanent(err) || !errors.Is(err, bad) {
				t.Fatalf("Serve = %v, want the permanent failure", err)
			}
			time.Sleep(time.Hour)
			if n := rec.count(); n != 2 {
				t.Errorf("%d units ran, want 2 (none after the permanent failure)", n)
			}
			if st := s.r.Stats(); st.Failures != 1 || st.Runs != 2 {
				t.Errorf("stats %+v, want 2 runs and 1 failure", st)
			}
			s.closeStop()
			if err := errors.Join(s.r.Drain(context.Background()), s.r.Stop(context.Background())); err != nil {
				t.Errorf("Drain, Stop = %v", err)
			}
		})
	})

	t.Run("an unmarked failure is retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			unit := func(context.Context) error { rec.mark(); return errors.New("store unreachable") }
			s := serve(t, mustLoop(t, LoopConfig{Name: "sweeper", Every: time.Second,
				Backoff: Backoff{Initial: time.Second, Max: time.Second}}, unit))
			time.Sleep(10 * time.Second)
			s.shutdown(t)
			if n := rec.count(); n < 5 {
				t.Errorf("%d units in 10s, want the failing unit retried", n)
			}
		})
	})
}
