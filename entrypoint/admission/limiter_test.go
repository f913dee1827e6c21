package admission

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/fault"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// window feeds one window of samples, each rtt long with inFlight units in flight,
// and lets the window's time pass so that the next sample closes it; it returns the
// limit after the window closed.
func window(l *Limiter, rtt time.Duration, inFlight int) int {
	for range 2 * minSamples {
		l.Sample(rtt, inFlight)
	}
	time.Sleep(l.cfg.Window)
	l.Sample(rtt, inFlight) // closes the window
	return l.Limit()
}

func newLimiter(t *testing.T, cfg Config) *Limiter {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLimiter(t *testing.T) {
	t.Run("falls when latency rises and recovers when it falls", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t, Config{InitialLimit: 20})
			for range 10 { // healthy and busy: climbs
				window(l, 10*time.Millisecond, l.Limit())
			}
			high := l.Limit()
			if high <= 20 {
				t.Fatalf("limit = %d after ten busy healthy windows, want above the initial 20", high)
			}
			prev := high
			for i := range 5 {
				got := window(l, 50*time.Millisecond, l.Limit())
				if got >= prev {
					t.Fatalf("window %d at 5× the latency: limit %d, want below %d", i, got, prev)
				}
				prev = got
			}
			low := prev
			for range 30 {
				window(l, 10*time.Millisecond, l.Limit())
			}
			if got := l.Limit(); got <= low {
				t.Fatalf("limit = %d after latency came back, want above %d", got, low)
			}
		})
	})

	t.Run("never falls below its floor", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t, Config{MinLimit: 5, InitialLimit: 50})
			window(l, time.Millisecond, 50)
			lowest := l.Limit()
			for i := range 100 {
				got := window(l, time.Duration(i+2)*time.Second, l.Limit())
				if got < 5 {
					t.Fatalf("window %d: limit %d, below the floor 5", i, got)
				}
				lowest = min(lowest, got)
			}
			if lowest != 5 {
				t.Fatalf("lowest limit = %d under ever-growing latency, want the floor 5", lowest)
			}
		})
	})

	t.Run("never climbs above its ceiling", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t, Config{MaxLimit: 30})
			for range 100 {
				if got := window(l, time.Millisecond, l.Limit()); got > 30 {
					t.Fatalf("limit %d, above the ceiling 30", got)
				}
			}
			if got := l.Limit(); got != 30 {
				t.Fatalf("limit = %d, want the ceiling 30", got)
			}
		})
	})

	t.Run("does not climb while idle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t, Config{InitialLimit: 40})
			for range 50 {
				window(l, time.Millisecond, 3)
			}
			if got := l.Limit(); got != 40 {
				t.Fatalf("limit = %d with 3 of 40 in use, want 40 kept", got)
			}
		})
	})

	t.Run("a probe re-measures a service that became slower for good", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t, Config{InitialLimit: 40, ProbeInterval: 5 * time.Second})
			window(l, 10*time.Millisecond, 40) // base 10ms
			// From now on every unit takes 40ms whatever the concurrency, and the
			// limit is full: the old base would hold the limit at its floor.
			probed := false
			for range 200 {
				l.refuse()
				if window(l, 40*time.Millisecond, l.Limit()) == 1 {
					probed = true
				}
			}
			if !probed {
				t.Fatal("the limit never dropped to the floor to probe")
			}
			if got := l.Limit(); got < 20 {
				t.Fatalf("limit = %d after the probes measured 40ms as the no-load latency, want it back up (≥ 20)", got)
			}
		})
	})

	t.Run("an unsampled unit costs no clock read and no allocation", func(t *testing.T) {
		l := newLimiter(t, Config{})
		if n := testing.AllocsPerRun(1000, func() { l.Finish(l.begin(1, 20), 1) }); n != 0 {
			t.Fatalf("Start+Finish allocates %v per run, want 0", n)
		}
	})
}

func TestConfig(t *testing.T) {
	problems := func(t *testing.T, err error) []fault.Problem {
		t.Helper()
		var ce *fault.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("error = %v, want a *fault.ConfigError", err)
		}
		return ce.Problems
	}
	t.Run("floor above ceiling names both fields' variables", func(t *testing.T) {
		_, err := New(Config{MinLimit: 50, MaxLimit: 10})
		p := problems(t, err)
		if len(p) != 1 || p[0].Field != "MinLimit" || p[0].Variable != envMinLimit || !strings.Contains(p[0].Reason, envMaxLimit) {
			t.Fatalf("problems = %v, want one on MinLimit naming %s and %s", p, envMinLimit, envMaxLimit)
		}
	})
	t.Run("non-positive window and a low tolerance are each reported", func(t *testing.T) {
		_, err := New(Config{Window: -time.Second, Tolerance: 0.5, ProbeInterval: -1, MaxQueueDelay: -time.Millisecond})
		p := problems(t, err)
		fields := map[string]bool{}
		for _, x := range p {
			fields[x.Field] = true
		}
		if len(p) != 4 || !fields["Window"] || !fields["Tolerance"] || !fields["ProbeInterval"] || !fields["MaxQueueDelay"] ||
			!strings.Contains(err.Error(), envWindow) || !strings.Contains(err.Error(), envMaxQueueDelay) {
			t.Fatalf("problems = %v, want Window (naming %s), Tolerance, ProbeInterval and MaxQueueDelay (naming %s)", p, envWindow, envMaxQueueDelay)
		}
	})
	t.Run("malformed variables are reported with their field", func(t *testing.T) {
		env := map[string]string{envOff: "maybe", envMinLimit: "x", envWindow: "soon", envMaxQueueDelay: "short"}
		_, err := Config{}.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		p := problems(t, err)
		if len(p) != 4 || !strings.Contains(err.Error(), "SW_ADMISSION_MAX_QUEUE_DELAY (MaxQueueDelay)") || !strings.Contains(err.Error(), "SW_ADMISSION_OFF (Off)") || !strings.Contains(err.Error(), "SW_ADMISSION_MIN_LIMIT (MinLimit)") {
			t.Fatalf("error = %v, want Off, MinLimit, Window and MaxQueueDelay each naming its variable", err)
		}
	})
	t.Run("variables override fields and Off returns no limiter", func(t *testing.T) {
		env := map[string]string{envOff: "true", envMaxLimit: "7"}
		cfg, err := Config{MaxLimit: 100}.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil || !cfg.Off || cfg.MaxLimit != 7 {
			t.Fatalf("FromEnv = %+v, %v; want Off and MaxLimit 7", cfg, err)
		}
		if l, err := New(cfg); l != nil || err != nil {
			t.Fatalf("New(Off) = %v, %v; want nil, nil", l, err)
		}
	})
}
