package cronentry

import (
	"testing"
	"testing/synctest"
	"time"
)

// A pause is the scheduling goroutine not running for a while, as in a frozen
// process: the afterWake hook sleeps in it, so it reads the clock late.
func TestMissedTicks(t *testing.T) {
	h, m, s := time.Hour, time.Minute, time.Second

	t.Run("RunOnce runs once for all the ticks missed in a pause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			x := start(t, []Job{{Name: "job", Every: h, Run: rec.run(0)}},
				func(sc *Scheduler) { sc.afterWake = pauseOnce(0, 3*h+30*m) }) // frozen from 0:01 to 3:31
			time.Sleep(4*h + s)
			x.shutdown()
			ticks := rec.all()
			if len(ticks) != 2 {
				t.Fatalf("%d runs, want 2: %+v", len(ticks), ticks)
			}
			if tk := ticks[0]; !tk.Scheduled.Equal(at(3*h)) || !tk.Fired.Equal(at(3*h+31*m)) || tk.Missed != 2 {
				t.Errorf("run after the pause = %+v, want the 3:00 tick fired at 3:31 with Missed=2", tk)
			}
			if tk := ticks[1]; !tk.Scheduled.Equal(at(4*h)) || !tk.Fired.Equal(at(4*h)) || tk.Missed != 0 {
				t.Errorf("next run = %+v, want the 4:00 tick on time", tk)
			}
			if n := x.s.count("job", skippedMissed); n != 2 {
				t.Errorf("skipped_missed = %d, want 2 (1:00 and 2:00)", n)
			}
		})
	})

	t.Run("Skip skips every tick missed in a pause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			x := start(t, []Job{{Name: "job", Every: h, SkipMissed: true, Run: rec.run(0)}},
				func(sc *Scheduler) { sc.afterWake = pauseOnce(0, 3*h+30*m) })
			time.Sleep(4*h + s)
			x.shutdown()
			if got, want := rec.scheduled(), times(4*h); !equalTimes(got, want) {
				t.Errorf("runs for ticks %v, want %v", got, want)
			}
			if n := x.s.count("job", skippedMissed); n != 3 {
				t.Errorf("skipped_missed = %d, want 3", n)
			}
		})
	})

	t.Run("a tick reached late within MissedAfter runs as usual", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			x := start(t, []Job{{Name: "job", Every: 30 * s, SkipMissed: true, MissedAfter: 10 * s, Run: rec.run(0)}},
				func(sc *Scheduler) { sc.afterWake = pauseOnce(0, 5*s) })
			time.Sleep(36 * s)
			ticks := rec.all()
			if len(ticks) != 1 || !ticks[0].Scheduled.Equal(at(30*s)) || !ticks[0].Fired.Equal(at(35*s)) {
				t.Errorf("runs = %+v, want the 0:30 tick fired at 0:35", ticks)
			}
			x.shutdown()
		})
	})

	t.Run("Skip skips a single tick reached past MissedAfter", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			x := start(t, []Job{{Name: "job", Every: 30 * s, SkipMissed: true, Run: rec.run(0)}},
				func(sc *Scheduler) { sc.afterWake = pauseOnce(0, 5*s) })
			time.Sleep(61 * s)
			x.shutdown()
			if got, want := rec.scheduled(), times(60*s); !equalTimes(got, want) {
				t.Errorf("runs for ticks %v, want %v", got, want)
			}
			if n := x.s.count("job", skippedMissed); n != 1 {
				t.Errorf("skipped_missed = %d, want 1", n)
			}
		})
	})

	t.Run("RunOnce folds missed ticks into an on-time tick due at the same wake", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			x := start(t, []Job{{Name: "job", Every: 10 * s, MissedAfter: 5 * s, Run: rec.run(0)}},
				func(sc *Scheduler) { sc.afterWake = pauseOnce(0, 23*s) }) // wakes at 0:10, reads 0:33
			time.Sleep(34 * s)
			x.shutdown()
			ticks := rec.all()
			if len(ticks) != 1 || !ticks[0].Scheduled.Equal(at(30*s)) || ticks[0].Missed != 2 {
				t.Fatalf("runs = %+v, want one for 0:30 with Missed=2", ticks)
			}
			if n := x.s.count("job", skippedMissed); n != 2 {
				t.Errorf("skipped_missed = %d, want 2 (0:10 and 0:20)", n)
			}
		})
	})

}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
