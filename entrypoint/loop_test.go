package entrypoint

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// recorder notes when each unit starts, in virtual time.
type recorder struct {
	mu     sync.Mutex
	starts []time.Time
}

func (rec *recorder) mark() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.starts = append(rec.starts, time.Now())
	return len(rec.starts)
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.starts)
}

// gaps returns the time between consecutive unit starts.
func (rec *recorder) gaps() []time.Duration {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var gs []time.Duration
	for i := 1; i < len(rec.starts); i++ {
		gs = append(gs, rec.starts[i].Sub(rec.starts[i-1]))
	}
	return gs
}

// serving is a Loop whose Serve runs in the background, as the Host runs it.
type serving struct {
	r        *Loop
	stop     chan struct{}
	stopOnce sync.Once
	served   chan error
}

func serve(t *testing.T, r *Loop) *serving {
	t.Helper()
	if err := r.Bind(context.Background()); err != nil {
		t.Fatalf("Bind = %v", err)
	}
	s := &serving{r: r, stop: make(chan struct{}), served: make(chan error, 1)}
	go func() { s.served <- r.Serve(context.Background(), s.stop) }()
	return s
}

func (s *serving) closeStop() { s.stopOnce.Do(func() { close(s.stop) }) }

// shutdown closes stop, stops the runner and checks that Serve returned nil.
func (s *serving) shutdown(t *testing.T) {
	t.Helper()
	s.closeStop()
	if err := s.r.Stop(context.Background()); err != nil {
		t.Errorf("Stop = %v, want nil", err)
	}
	if err := <-s.served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}

// mustLoop is NewLoop that fails the test on an error.
func mustLoop(t *testing.T, cfg LoopConfig, unit func(context.Context) error, opts ...Option) *Loop {
	t.Helper()
	r, err := NewLoop(cfg, unit, opts...)
	if err != nil {
		t.Fatalf("NewLoop = %v", err)
	}
	return r
}

func TestNewLoop(t *testing.T) {
	t.Run("bad config lists every problem at construction", func(t *testing.T) {
		r, err := NewLoop(LoopConfig{Jitter: -time.Second, JitterFraction: -0.1, StartDelay: -1, UnitTimeout: -1,
			Backoff: Backoff{Initial: time.Second, Max: time.Millisecond}}, nil)
		var ce *fault.ConfigError
		if r != nil || !errors.As(err, &ce) {
			t.Fatalf("NewLoop = %v, %v; want nil and a *fault.ConfigError", r, err)
		}
		want := []string{"Name", "Every", "Jitter", "StartDelay", "UnitTimeout", "JitterFraction", "Backoff.Max", "unit"}
		var got []string
		for _, p := range ce.Problems {
			got = append(got, p.Field)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("problems on %v, want %v: %v", got, want, err)
		}
	})

	t.Run("zero fields take the defaults", func(t *testing.T) {
		r := mustLoop(t, LoopConfig{Name: "poller", Every: time.Second}, func(context.Context) error { return nil })
		want := LoopConfig{Name: "poller", Every: time.Second, Jitter: 100 * time.Millisecond, // 0.1 of Every
			Backoff: Backoff{Initial: 100 * time.Millisecond, Max: 30 * time.Second}}
		if r.cfg != want {
			t.Errorf("resolved %+v, want %+v", r.cfg, want)
		}
		r = mustLoop(t, LoopConfig{Name: "poller", Every: time.Second, Backoff: Backoff{Initial: time.Minute}},
			func(context.Context) error { return nil })
		if r.cfg.Backoff.Max != time.Minute {
			t.Errorf("Backoff.Max = %v, want Backoff.Initial when that is above the default", r.cfg.Backoff.Max)
		}
	})

	t.Run("a jitter fraction outside [0, 1), or NoJitter with a jitter, is a ConfigError naming the field", func(t *testing.T) {
		unit := func(context.Context) error { return nil }
		for _, c := range []struct {
			cfg   LoopConfig
			field string
		}{
			{LoopConfig{Name: "a", Every: time.Second, JitterFraction: -0.5}, "JitterFraction"},
			{LoopConfig{Name: "a", Every: time.Second, JitterFraction: 1}, "JitterFraction"},
			{LoopConfig{Name: "a", Every: time.Second, JitterFraction: math.NaN()}, "JitterFraction"},
			{LoopConfig{Name: "a", Every: time.Second, NoJitter: true, Jitter: time.Millisecond}, "NoJitter"},
		} {
			_, err := NewLoop(c.cfg, unit)
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || len(ce.Problems) != 1 || ce.Problems[0].Field != c.field {
				t.Errorf("NewLoop(%+v) = %v, want one problem on %s", c.cfg, err, c.field)
			}
		}
		if r := mustLoop(t, LoopConfig{Name: "a", Every: time.Second, JitterFraction: 0.5}, unit); r.cfg.Jitter != 500*time.Millisecond {
			t.Errorf("JitterFraction 0.5 of 1s = %v, want 500ms", r.cfg.Jitter)
		}
		if r := mustLoop(t, LoopConfig{Name: "a", Every: time.Second, NoJitter: true}, unit); r.cfg.Jitter != 0 {
			t.Errorf("NoJitter: Jitter = %v, want 0", r.cfg.Jitter)
		}
	})

	t.Run("Serve before Bind is out of turn", func(t *testing.T) {
		r := mustLoop(t, LoopConfig{Name: "poller", Every: time.Second}, func(context.Context) error { return nil })
		err := r.Serve(context.Background(), nil)
		if !errors.Is(err, ErrOutOfTurn) || err.Error() != `entrypoint "poller": Serve called while new: entrypoint: called out of turn` {
			t.Fatalf("Serve before Bind = %v", err)
		}
	})

	t.Run("jitter larger than every is allowed", func(t *testing.T) {
		r := mustLoop(t, LoopConfig{Name: "poller", Every: time.Second, Jitter: time.Minute}, func(context.Context) error { return nil })
		if r.cfg.Jitter != time.Minute {
			t.Fatalf("Jitter = %v", r.cfg.Jitter)
		}
	})

	t.Run("Bind starts nothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			r := mustLoop(t, LoopConfig{Name: "poller", Every: time.Second}, func(context.Context) error { rec.mark(); return nil })
			if err := r.Bind(context.Background()); err != nil {
				t.Fatalf("Bind = %v", err)
			}
			time.Sleep(time.Hour)
			if n := rec.count(); n != 0 {
				t.Fatalf("%d units ran after Bind alone, want 0", n)
			}
		})
	})
}

func TestLoopSchedule(t *testing.T) {
	t.Run("runs the first unit at once then every ± jitter", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var rec recorder
			every, jitter := 10*time.Second, 2*time.Second
			s := serve(t, mustLoop(t, LoopConfig{Name: "poller", Every: every, Jitter: jitter}, func(context.Context) error { rec.mark(); return nil }))
			time.Sleep(10 * time.Minute)
			s.shutdown(t)

			if first := rec.starts[0].Sub(start); first != 0 {
				t.Errorf("first unit ran after %v, want at once", first)
			}
			gaps := rec.gaps()
			if len(gaps) < 48 {
				t.Fatalf("%d units in 10m, want at least 49", len(gaps)+1)
			}
			distinct := map[time.Duration]bool{}
			for i, g := range gaps {
				if g < every-jitter || g > every+jitter {
					t.Errorf("gap %d = %v, want within [%v, %v]", i, g, every-jitter, every+jitter)
				}
				distinct[g] = true
			}
			if len(distinct) < 2 {
				t.Errorf("every gap was %v: jitter not applied", gaps[0])
			}
		})
	})

	t.Run("by default every wait is jittered by a tenth of Every", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			s := serve(t, mustLoop(t, LoopConfig{Name: "poller", Every: time.Minute}, func(context.Context) error { rec.mark(); return nil }))
			time.Sleep(time.Hour)
			s.shutdown(t)
			distinct := map[time.Duration]bool{}
			for i, g := range rec.gaps() {
				if g < 54*time.Second || g > 66*time.Second {
					t.Errorf("gap %d = %v, want within 1m ± 6s", i, g)
				}
				distinct[g] = true
			}
			if len(distinct) < 10 {
				t.Errorf("%d distinct gaps of %d: replicas would tick in step", len(distinct), len(rec.gaps()))
			}
		})
	})

	t.Run("with NoJitter every wait is exactly every", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			s := serve(t, mustLoop(t, LoopConfig{Name: "poller", Every: time.Minute, NoJitter: true}, func(context.Context) error { rec.mark(); return nil }))
			time.Sleep(5*time.Minute + time.Second)
			s.shutdown(t)
			if n := rec.count(); n != 6 {
				t.Fatalf("%d units in 5m1s, want 6", n)
			}
			for i, g := range rec.gaps() {
				if g != time.Minute {
					t.Errorf("gap %d = %v, want 1m", i, g)
				}
			}
		})
	})

	t.Run("the interval is measured from the end of a unit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			unit := func(context.Context) error { rec.mark(); time.Sleep(3 * time.Second); return nil }
			s := serve(t, mustLoop(t, LoopConfig{Name: "poller", Every: 10 * time.Second, NoJitter: true}, unit))
			time.Sleep(time.Minute)
			s.shutdown(t)
			for i, g := range rec.gaps() {
				if g != 13*time.Second {
					t.Errorf("gap %d = %v, want 13s (3s unit + 10s wait)", i, g)
				}
			}
		})
	})

	t.Run("WithStartDelay postpones the first unit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var rec recorder
			s := serve(t, mustLoop(t, LoopConfig{Name: "poller", Every: time.Minute, StartDelay: 5 * time.Second, NoJitter: true}, func(context.Context) error { rec.mark(); return nil }))
			time.Sleep(2 * time.Minute)
			s.shutdown(t)
			if first := rec.starts[0].Sub(start); first != 5*time.Second {
				t.Fatalf("first unit ran after %v, want 5s", first)
			}
		})
	})

	t.Run("units get Serve's ctx values", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			type key struct{}
			got := make(chan any, 1)
			r := mustLoop(t, LoopConfig{Name: "poller", Every: time.Second}, func(ctx context.Context) error {
				select {
				case got <- ctx.Value(key{}):
				default:
				}
				return nil
			})
			if err := r.Bind(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
			stop := make(chan struct{})
			close(stop)
			if err := r.Serve(ctx, stop); err != nil {
				t.Fatalf("Serve = %v", err)
			}
			cancel() // after Serve returned: must not reach the units
			time.Sleep(time.Minute)
			if r.Stats().Runs < 60 {
				t.Errorf("%d units after the Serve ctx was cancelled post-stop, want the loop unaffected", r.Stats().Runs)
			}
			if v := <-got; v != "v" {
				t.Errorf("unit ctx value = %v, want v", v)
			}
			if err := r.Stop(context.Background()); err != nil {
				t.Fatalf("Stop = %v", err)
			}
		})
	})

	t.Run("InFlight is 1 while a unit runs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			s := serve(t, mustLoop(t, LoopConfig{Name: "poller", Every: time.Hour}, func(context.Context) error { <-release; return nil }))
			synctest.Wait()
			if n := s.r.InFlight(); n != 1 {
				t.Errorf("InFlight = %d during a unit, want 1", n)
			}
			release <- struct{}{}
			synctest.Wait()
			if n := s.r.InFlight(); n != 0 {
				t.Errorf("InFlight = %d between units, want 0", n)
			}
			close(release)
			s.shutdown(t)
		})
	})
}
