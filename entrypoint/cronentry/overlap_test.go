package cronentry

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestOverlap(t *testing.T) {
	s, ms := time.Second, time.Millisecond

	t.Run("Skip skips ticks while the previous run runs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			x := start(t, []Job{{Name: "job", Every: s, Run: rec.run(2500 * ms)}}, nil)
			time.Sleep(10*s + ms)
			x.shutdown()
			if got, want := rec.scheduled(), times(s, 4*s, 7*s, 10*s); !slices.Equal(got, want) {
				t.Errorf("runs for ticks %v, want %v", got, want)
			}
			if n := x.s.count("job", skippedOverlap); n != 6 {
				t.Errorf("skipped_overlap = %d, want 6 (ticks 2,3,5,6,8,9)", n)
			}
		})
	})

	t.Run("Queue runs the latest waiting tick when the run ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			x := start(t, []Job{{Name: "job", Every: s, Overlap: OverlapQueue, Run: rec.run(2400 * ms)}}, nil)
			time.Sleep(8*s + 300*ms)
			ticks := rec.all()
			var fired []time.Time
			for _, tk := range ticks {
				fired = append(fired, tk.Fired)
			}
			if got, want := rec.scheduled(), times(s, 3*s, 5*s, 8*s); !slices.Equal(got, want) {
				t.Errorf("runs for ticks %v, want %v", got, want)
			}
			if want := times(s, 3400*ms, 5800*ms, 8200*ms); !slices.EqualFunc(fired, want, time.Time.Equal) {
				t.Errorf("runs started at %v, want %v (each right after the previous)", fired, want)
			}
			if n := x.s.count("job", skippedOverlap); n != 4 {
				t.Errorf("skipped_overlap = %d, want 4 (ticks 2, 4, 6 and 7 replaced in the queue)", n)
			}
			x.shutdown()
		})
	})

	t.Run("Allow runs ticks side by side", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			x := start(t, []Job{{Name: "job", Every: s, Overlap: OverlapAllow, Run: rec.run(2500 * ms)}}, nil)
			time.Sleep(3*s + ms)
			if n := x.s.InFlight(); n != 3 {
				t.Errorf("InFlight = %d at 3s, want 3 (runs of ticks 1, 2, 3)", n)
			}
			time.Sleep(2 * s)
			x.shutdown()
			if got, want := rec.scheduled(), times(s, 2*s, 3*s, 4*s, 5*s); !slices.Equal(got, want) {
				t.Errorf("runs for ticks %v, want %v", got, want)
			}
			if n := x.s.count("job", skippedOverlap); n != 0 {
				t.Errorf("skipped_overlap = %d, want 0", n)
			}
		})
	})

	t.Run("Drain drops the queued tick", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			x := start(t, []Job{{Name: "job", Every: s, Overlap: OverlapQueue, Run: rec.run(5 * s)}}, nil)
			time.Sleep(2*s + ms) // tick 1 runs, tick 2 waits
			x.closeStop()
			if err := x.s.Drain(context.Background()); err != nil {
				t.Fatalf("Drain = %v", err)
			}
			if got := time.Since(at(0)); got != 6*s {
				t.Errorf("Drain returned at %v, want 6s (the end of tick 1's run only)", got)
			}
			if got, want := rec.scheduled(), times(s); !slices.Equal(got, want) {
				t.Errorf("runs for ticks %v, want %v", got, want)
			}
			if n := x.s.count("job", skippedDraining); n != 1 {
				t.Errorf("skipped_draining = %d, want 1", n)
			}
			if err := x.s.Stop(context.Background()); err != nil {
				t.Errorf("Stop = %v", err)
			}
		})
	})
}
