package cronentry

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/lock"
)

func TestScheduleTicks(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	h, m, s := time.Hour, time.Minute, time.Second
	ms := time.Millisecond
	tests := []struct {
		name    string
		job     Job
		delay   time.Duration // Serve starts this long after the bubble's epoch
		runFor  time.Duration
		want    []time.Time
		wantLoc *time.Location
	}{
		{"cron with a seconds field", Job{Schedule: "*/15 * * * * *"}, 0, m + ms,
			times(15*s, 30*s, 45*s, m), time.UTC},
		{"five-field cron starts at minutes", Job{Schedule: "*/5 * * * *"}, 0, 11 * m,
			times(5*m, 10*m), time.UTC},
		{"CRON_TZ prefix reads the expression in that zone", Job{Schedule: "CRON_TZ=Europe/Paris 0 30 9 * * *"}, 0, 49 * h,
			times(8*h+30*m, 32*h+30*m), paris},
		{"TZ prefix too", Job{Schedule: "TZ=Asia/Tokyo 0 0 12 * * *"}, 0, 24 * h,
			times(3 * h), tokyo},
		{"Location reads the expression in that zone", Job{Schedule: "0 0 12 * * *", Location: tokyo}, 0, 24 * h,
			times(3 * h), tokyo},
		{"UTC by default, not time.Local", Job{Schedule: "0 0 12 * * *"}, 0, 24 * h,
			times(12 * h), time.UTC},
		{"@hourly: a one-hour schedule", Job{Schedule: "@hourly"}, 0, 3*h + ms,
			times(h, 2*h, 3*h), time.UTC},
		{"@every is anchored at the Unix epoch", Job{Schedule: "@every 90s"}, 40 * s, 5 * m,
			times(90*s, 3*m, 270*s), time.UTC},
		{"Every below a second", Job{Every: 200 * ms}, 0, s + ms,
			times(200*ms, 400*ms, 600*ms, 800*ms, s), time.UTC},
		{"Every is anchored at the Unix epoch, not at Serve", Job{Every: s}, 300 * ms, 3*s + ms,
			times(s, 2*s, 3*s), time.UTC},
		{"Every in a Location gives ticks in that zone", Job{Every: h, Location: paris}, 0, 2*h + ms,
			times(h, 2*h), paris},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec recorder
				tc.job.Name, tc.job.Run = "job", rec.run(0)
				time.Sleep(tc.delay)
				x := start(t, []Job{tc.job}, nil)
				time.Sleep(tc.runFor - tc.delay)
				x.shutdown()
				ticks := rec.all()
				if got := rec.scheduled(); !slices.Equal(got, tc.want) {
					t.Fatalf("ticks at %v, want %v", got, tc.want)
				}
				for _, tk := range ticks {
					if !tk.Fired.Equal(tk.Scheduled) {
						t.Errorf("tick %v fired at %v, want on time (no jitter)", tk.Scheduled, tk.Fired)
					}
					if tk.Scheduled.Location().String() != tc.wantLoc.String() {
						t.Errorf("Scheduled in %v, want %v", tk.Scheduled.Location(), tc.wantLoc)
					}
					if tk.Job != "job" || tk.Missed != 0 || tk.Token != 0 {
						t.Errorf("tick = %+v, want Job=job Missed=0 Token=0", tk)
					}
				}
				if n := x.s.count("job", succeeded); n != uint64(len(tc.want)) {
					t.Errorf("ok = %d, want %d", n, len(tc.want))
				}
			})
		})
	}
}

func TestParisTickIsHalfPastNineLocal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		x := start(t, []Job{{Name: "report", Schedule: "CRON_TZ=Europe/Paris 0 30 9 * * *", Run: rec.run(0)}}, nil)
		time.Sleep(24 * time.Hour)
		x.shutdown()
		ticks := rec.all()
		if len(ticks) != 1 {
			t.Fatalf("%d ticks in a day, want 1", len(ticks))
		}
		if got := ticks[0].Scheduled.Format("15:04:05 MST"); got != "09:30:00 CET" {
			t.Errorf("Scheduled = %s, want 09:30:00 CET", got)
		}
	})
}

func TestJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const jitter = 20 * time.Second
		var rec recorder
		x := start(t, []Job{{Name: "job", Every: time.Minute, Jitter: jitter, Run: rec.run(0)}}, nil)
		time.Sleep(100*time.Minute + jitter)
		x.shutdown()
		ticks := rec.all()
		if len(ticks) != 100 {
			t.Fatalf("%d ticks, want 100", len(ticks))
		}
		offsets := map[time.Duration]bool{}
		for i, tk := range ticks {
			if want := at(time.Duration(i+1) * time.Minute); !tk.Scheduled.Equal(want) {
				t.Errorf("tick %d Scheduled = %v, want %v: jitter must not move the nominal tick", i, tk.Scheduled, want)
			}
			d := tk.Fired.Sub(tk.Scheduled)
			if d < 0 || d >= jitter {
				t.Errorf("tick %d fired %v after its time, want within [0, %v)", i, d, jitter)
			}
			offsets[d] = true
		}
		if len(offsets) < 50 {
			t.Errorf("only %d distinct delays in 100 ticks: jitter is not spread", len(offsets))
		}
	})
}

// By default a job's ticks are jittered by a tenth of its interval (at most
// maxJitter; for a cron expression, of its shortest gap; for a once-per-fleet
// job, below half its TTL), so that replicas and jobs do not start in step.
func TestDefaultJitter(t *testing.T) {
	run := func(context.Context, Tick) error { return nil }
	lk := lock.NewMemory()
	for _, c := range []struct {
		job  Job
		want time.Duration
	}{
		{Job{Name: "a", Every: time.Minute, Run: run}, 6 * time.Second},
		{Job{Name: "a", Every: time.Minute, JitterFraction: 0.5, Run: run}, 10 * time.Second}, // capped
		{Job{Name: "a", Every: 10 * time.Second, JitterFraction: 0.25, Run: run}, 2500 * time.Millisecond},
		{Job{Name: "a", Schedule: "@daily", Run: run}, maxJitter},
		{Job{Name: "a", Schedule: "0,1 * * * * *", Run: run}, 100 * time.Millisecond}, // the 1s gap, not the 59s one
		{Job{Name: "a", Every: time.Minute, OncePerFleet: OncePerFleet(lk, "a", 4*time.Second), Run: run}, 2 * time.Second},
		{Job{Name: "a", Every: time.Minute, NoJitter: true, Run: run}, 0},
		{Job{Name: "a", Every: time.Minute, Jitter: time.Second, Run: run}, time.Second},
	} {
		s, err := New(Config{Name: "cron"}, []Job{c.job})
		if err != nil {
			t.Fatalf("New(%+v) = %v", c.job, err)
		}
		if got := s.jobs[0].Jitter; got != c.want {
			t.Errorf("%q every %v fraction %v: Jitter = %v, want %v", c.job.Schedule, c.job.Every, c.job.JitterFraction, got, c.want)
		}
	}

	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		x := startJittered(t, []Job{{Name: "job", Every: time.Minute, Run: rec.run(0)}}, nil)
		time.Sleep(100*time.Minute + 6*time.Second)
		x.shutdown()
		offsets := map[time.Duration]bool{}
		for i, tk := range rec.all() {
			d := tk.Fired.Sub(tk.Scheduled)
			if d < 0 || d >= 6*time.Second {
				t.Errorf("tick %d fired %v after its time, want within [0, 6s)", i, d)
			}
			offsets[d] = true
		}
		if len(offsets) < 50 {
			t.Errorf("only %d distinct delays in %d ticks: ticks are not jittered by default", len(offsets), len(rec.all()))
		}
	})
}
