package entrypoint_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
)

// A Loop that ended on a permanent failure serves again when Serve is called again:
// its units run afresh, and Drain and Stop then end it as after a first Serve. A
// Drain between the failure and the second Serve leaves nothing to start.
func TestLoopServesAgainAfterAFailure(t *testing.T) {
	bad := errors.New("the sweep's table is gone")
	newLoop := func(t *testing.T, runs *atomic.Int32) *entrypoint.Loop {
		l, err := entrypoint.NewLoop(entrypoint.LoopConfig{Name: "sweeper", Every: time.Second, NoJitter: true},
			func(context.Context) error {
				if runs.Add(1) == 1 {
					return fault.Permanent(bad)
				}
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Bind(t.Context()); err != nil {
			t.Fatal(err)
		}
		return l
	}

	t.Run("served again, then drained and stopped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var runs atomic.Int32
			l := newLoop(t, &runs)
			stop := make(chan struct{})
			if err := l.Serve(t.Context(), stop); !errors.Is(err, bad) {
				t.Fatalf("first Serve = %v, want the permanent failure", err)
			}
			served := make(chan error, 1)
			go func() { served <- l.Serve(t.Context(), stop) }()
			time.Sleep(2500 * time.Millisecond) // units at 0s, 1s, 2s
			synctest.Wait()
			if n := runs.Load(); n != 4 {
				t.Fatalf("%d units ran, want 4: the failed one, then three of the second Serve", n)
			}
			close(stop)
			if err := <-served; err != nil {
				t.Fatalf("second Serve = %v, want nil at the stop", err)
			}
			if err := l.Drain(t.Context()); err != nil {
				t.Fatalf("Drain = %v", err)
			}
			time.Sleep(time.Hour)
			if n := runs.Load(); n != 4 {
				t.Errorf("%d units ran, want none after the Drain", n)
			}
			if err := l.Stop(t.Context()); err != nil {
				t.Errorf("Stop = %v", err)
			}
			if st := l.Stats(); st.Runs != 4 || st.Failures != 1 {
				t.Errorf("stats %+v, want 4 runs and 1 failure: nothing counted twice", st)
			}
		})
	})

	t.Run("drained before the second Serve", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var runs atomic.Int32
			l := newLoop(t, &runs)
			stop := make(chan struct{})
			if err := l.Serve(t.Context(), stop); !errors.Is(err, bad) {
				t.Fatalf("first Serve = %v, want the permanent failure", err)
			}
			if err := l.Drain(t.Context()); err != nil {
				t.Fatalf("Drain after the failure = %v, want nil: the loop has ended", err)
			}
			if err := l.Serve(t.Context(), stop); err != nil {
				t.Fatalf("Serve after Drain = %v, want nil and nothing started", err)
			}
			time.Sleep(time.Hour)
			if n := runs.Load(); n != 1 {
				t.Errorf("%d units ran, want 1: Serve after Drain starts nothing", n)
			}
			if err := l.Stop(t.Context()); err != nil {
				t.Errorf("Stop = %v", err)
			}
		})
	})
}
