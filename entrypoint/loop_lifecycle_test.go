package entrypoint

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/testenv"
)

func TestLoopShutdown(t *testing.T) {
	t.Run("Serve returns at stop while units keep running", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			s := serve(t, mustLoop(t, LoopConfig{Name: "poller", Every: time.Second, NoJitter: true}, func(context.Context) error { rec.mark(); return nil }))
			time.Sleep(10*time.Second + 500*time.Millisecond) // between two units
			s.closeStop()
			synctest.Wait()
			select {
			case err := <-s.served:
				s.served <- err // for shutdown to check
			default:
				t.Error("Serve did not return after stop closed")
			}
			before := rec.count()
			time.Sleep(10 * time.Second) // the drain delay: still accepting
			if after := rec.count(); after-before != 10 {
				t.Errorf("%d units ran in the 10s after stop, want 10", after-before)
			}
			s.shutdown(t)
		})
	})

	t.Run("Drain waits for the running unit and starts no new one", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			cut := false
			unit := func(ctx context.Context) error {
				rec.mark()
				select {
				case <-time.After(30 * time.Second):
				case <-ctx.Done():
					cut = true
				}
				return nil
			}
			s := serve(t, mustLoop(t, LoopConfig{Name: "relay", Every: time.Millisecond}, unit))
			time.Sleep(time.Second) // the first unit is 1s into its 30s
			s.closeStop()
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.r.Drain(ctx); err != nil {
				t.Fatalf("Drain = %v, want nil", err)
			}
			if d := time.Since(start); d != 29*time.Second {
				t.Errorf("Drain returned after %v, want 29s (the rest of the unit)", d)
			}
			if cut {
				t.Error("Drain cancelled the running unit's ctx")
			}
			time.Sleep(time.Hour)
			if n := rec.count(); n != 1 {
				t.Errorf("%d units ran, want 1: none may start after Drain", n)
			}
			s.shutdown(t)
		})
	})

	t.Run("Drain cuts the wait between units short", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := serve(t, mustLoop(t, LoopConfig{Name: "poller", Every: time.Hour}, func(context.Context) error { return nil }))
			synctest.Wait()
			s.closeStop()
			start := time.Now()
			if err := s.r.Drain(context.Background()); err != nil {
				t.Fatalf("Drain = %v", err)
			}
			if d := time.Since(start); d != 0 {
				t.Errorf("Drain took %v between units, want at once", d)
			}
			s.shutdown(t)
		})
	})

	t.Run("Drain returns ctx.Err when the unit outlasts ctx, then Stop cancels it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			unitErr := make(chan error, 1)
			unit := func(ctx context.Context) error {
				<-ctx.Done()
				unitErr <- ctx.Err()
				return ctx.Err()
			}
			s := serve(t, mustLoop(t, LoopConfig{Name: "relay", Every: time.Second}, unit))
			synctest.Wait()
			s.closeStop()
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.r.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Drain = %v, want context.DeadlineExceeded", err)
			}
			if d := time.Since(start); d != 5*time.Second {
				t.Errorf("Drain gave up after %v, want 5s", d)
			}
			if n := s.r.InFlight(); n != 1 {
				t.Errorf("InFlight = %d after Drain expired, want 1 (left for Stop)", n)
			}
			if err := s.r.Stop(context.Background()); err != nil {
				t.Fatalf("Stop = %v, want nil", err)
			}
			if err := <-unitErr; !errors.Is(err, context.Canceled) {
				t.Errorf("unit ctx err = %v, want context.Canceled", err)
			}
			if st := s.r.Stats(); st.Failures != 0 {
				t.Errorf("Stats = %+v: a unit cut by Stop is not a failure", st)
			}
			s.shutdown(t)
		})
	})

	t.Run("Stop returns ctx.Err when the unit ignores cancellation", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := serve(t, mustLoop(t, LoopConfig{Name: "stubborn", Every: time.Second}, func(context.Context) error { time.Sleep(time.Hour); return nil }))
			synctest.Wait()
			s.closeStop()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := s.r.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Stop = %v, want context.DeadlineExceeded", err)
			}
			s.shutdown(t) // waits out the unit, so the bubble ends with no goroutine left
		})
	})

	t.Run("Drain and Stop without Serve return nil and Serve then starts nothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			r := mustLoop(t, LoopConfig{Name: "poller", Every: time.Second}, func(context.Context) error { rec.mark(); return nil })
			if err := r.Bind(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := r.Drain(context.Background()); err != nil {
				t.Errorf("Drain = %v, want nil", err)
			}
			if err := r.Stop(context.Background()); err != nil {
				t.Errorf("Stop = %v, want nil", err)
			}
			stop := make(chan struct{})
			close(stop)
			if err := r.Serve(context.Background(), stop); err != nil {
				t.Errorf("Serve after Stop = %v, want nil", err)
			}
			time.Sleep(time.Minute)
			if n := rec.count(); n != 0 {
				t.Errorf("%d units ran after Stop, want 0", n)
			}
		})
	})

	t.Run("Serve returns ctx.Err and stops the loop when ctx is cancelled before stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := mustLoop(t, LoopConfig{Name: "poller", Every: time.Second}, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
			if err := r.Bind(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := r.Serve(ctx, make(chan struct{})); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Serve = %v, want context.DeadlineExceeded", err)
			}
			if r.InFlight() != 0 {
				t.Error("a unit is still running after Serve returned")
			}
			if err := r.Stop(context.Background()); err != nil {
				t.Errorf("Stop = %v, want nil", err)
			}
		})
	})

	t.Run("Serve twice is an error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := serve(t, mustLoop(t, LoopConfig{Name: "poller", Every: time.Second}, func(context.Context) error { return nil }))
			synctest.Wait()
			if err := s.r.Serve(context.Background(), s.stop); !errors.Is(err, ErrOutOfTurn) {
				t.Errorf("second Serve = %v, want an error", err)
			}
			s.shutdown(t)
		})
	})
}

func TestLoopFailures(t *testing.T) {
	t.Run("failures back off exponentially, capped, and reset after a success", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			// fail ×5, succeed, fail ×2, then succeed from then on
			outcome := []bool{false, false, false, false, false, true, false, false}
			unit := func(context.Context) error {
				n := rec.mark()
				if n <= len(outcome) && !outcome[n-1] {
					return errors.New("upstream down")
				}
				return nil
			}
			s := serve(t, mustLoop(t, LoopConfig{Name: "relay", Every: time.Hour, NoJitter: true, Backoff: Backoff{Initial: 100 * time.Millisecond, Max: time.Second}}, unit))
			time.Sleep(3 * time.Hour)
			s.shutdown(t)

			ms := time.Millisecond
			want := [][2]time.Duration{
				{50 * ms, 100 * ms}, {100 * ms, 200 * ms}, {200 * ms, 400 * ms}, {400 * ms, 800 * ms},
				{500 * ms, 1000 * ms},  // capped at max
				{time.Hour, time.Hour}, // after the success: every
				{50 * ms, 100 * ms},    // reset
				{100 * ms, 200 * ms},
				{time.Hour, time.Hour},
			}
			gaps := rec.gaps()
			if len(gaps) < len(want) {
				t.Fatalf("gaps %v, want at least %d", gaps, len(want))
			}
			for i, w := range want {
				if gaps[i] < w[0] || gaps[i] > w[1] {
					t.Errorf("gap %d = %v, want within [%v, %v]", i, gaps[i], w[0], w[1])
				}
			}
			for i := 1; i < 4; i++ { // while the steps double; the cap may draw lower
				if gaps[i] < gaps[i-1] {
					t.Errorf("backoff shrank from %v to %v on consecutive failures", gaps[i-1], gaps[i])
				}
			}
			if st := s.r.Stats(); st.Failures != 7 || st.ConsecutiveFailures != 0 || st.Runs != uint64(rec.count()) {
				t.Errorf("Stats = %+v, want 7 failures, 0 consecutive, %d runs", st, rec.count())
			}
		})
	})

	t.Run("a panicking unit is recovered, logged with its stack, and backs off", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			var rec recorder
			unit := func(context.Context) error {
				if rec.mark() == 1 {
					panic("boom")
				}
				return nil
			}
			s := serve(t, mustLoop(t, LoopConfig{Name: "relay", Every: time.Hour}, unit, WithTelemetry(Telemetry{Logger: zap.New(core)})))
			time.Sleep(time.Second)
			s.shutdown(t)

			if g := rec.gaps()[0]; g < 50*time.Millisecond || g > 100*time.Millisecond { // the default first step, 100ms
				t.Errorf("wait after the panic = %v, want within the first backoff step", g)
			}
			entries := logs.FilterMessage("loop unit failed").All()
			if len(entries) != 1 {
				t.Fatalf("%d failure log entries, want 1", len(entries))
			}
			fields := entries[0].ContextMap()
			if fields["entrypoint"] != "relay" || !strings.Contains(fields["error"].(string), "panicked: boom") ||
				fields["stack"] == nil || fields["retry_in"] == nil {
				t.Errorf("failure log fields = %v, want entrypoint, the panic, its stack and retry_in", fields)
			}
			if st := s.r.Stats(); st.Failures != 1 {
				t.Errorf("Stats = %+v, want 1 failure", st)
			}
		})
	})

	t.Run("WithUnitTimeout bounds each unit and an overrun is a failure", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			unit := func(ctx context.Context) error {
				start := time.Now()
				if rec.mark() > 1 {
					return nil
				}
				if dl, ok := ctx.Deadline(); !ok || dl.Sub(start) != 2*time.Second {
					t.Errorf("unit ctx deadline = %v (set %v), want 2s from the start", dl.Sub(start), ok)
				}
				<-ctx.Done()
				return ctx.Err()
			}
			s := serve(t, mustLoop(t, LoopConfig{Name: "relay", Every: time.Hour, UnitTimeout: 2 * time.Second}, unit))
			time.Sleep(3 * time.Second)
			s.shutdown(t)
			if st := s.r.Stats(); st.Failures != 1 || st.Runs != 2 {
				t.Errorf("Stats = %+v, want the timed-out unit counted as a failure, then a retry", st)
			}
		})
	})
}

func TestLoopSetDefaults(t *testing.T) {
	failing := func(context.Context) error { return errors.New("down") }
	for _, tc := range []struct {
		name         string
		opts         []Option
		wantHostLogs bool
	}{
		{"the Host's logger is used without WithTelemetry's", nil, true},
		{"WithTelemetry's logger wins over the Host's", []Option{WithTelemetry(Telemetry{Logger: zap.NewNop()})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				core, logs := observer.New(zapcore.InfoLevel)
				r := mustLoop(t, LoopConfig{Name: "relay", Every: time.Hour}, failing, tc.opts...)
				r.SetDefaults(Telemetry{Logger: zap.New(core)})
				s := serve(t, r)
				synctest.Wait()
				s.shutdown(t)
				if got := logs.FilterMessage("loop unit failed").Len() > 0; got != tc.wantHostLogs {
					t.Errorf("failure logged to the Host's logger: %v, want %v", got, tc.wantHostLogs)
				}
			})
		})
	}
}

func TestLoopReportsPanics(t *testing.T) {
	panicking := func(context.Context) error { panic("nil map") }
	for _, tc := range []struct {
		name     string
		opts     func(own *testenv.Reports) []Option
		wantHost bool
	}{
		{"to the Host's reporter without WithTelemetry's", func(*testenv.Reports) []Option { return nil }, true},
		{"to WithTelemetry's over the Host's", func(own *testenv.Reports) []Option { return []Option{WithTelemetry(Telemetry{Reporter: own})} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				host, own := &testenv.Reports{}, &testenv.Reports{}
				r := mustLoop(t, LoopConfig{Name: "relay", Every: time.Hour}, panicking, tc.opts(own)...)
				if err := r.SetDefaults(Telemetry{Reporter: host}); err != nil {
					t.Fatal(err)
				}
				s := serve(t, r)
				synctest.Wait() // the first unit has panicked; the next waits out its backoff
				s.shutdown(t)
				want, other := own, host
				if tc.wantHost {
					want, other = host, own
				}
				errs, tags := want.Get()
				if len(errs) != 1 {
					t.Fatalf("%d reports, want the one panic", len(errs))
				}
				if pe, ok := errors.AsType[*fault.PanicError](errs[0]); !ok || pe.Value != "nil map" || len(pe.Stack) == 0 {
					t.Errorf("reported %v, want the unit's *fault.PanicError with its stack", errs[0])
				}
				if tags[0][fault.TagEntrypoint] != "relay" {
					t.Errorf("tags = %v, want entrypoint=relay", tags[0])
				}
				if errs, _ := other.Get(); len(errs) != 0 {
					t.Errorf("the other reporter got %v", errs)
				}
			})
		})
	}
	t.Run("a failure that is not a panic is only logged", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			host := &testenv.Reports{}
			r := mustLoop(t, LoopConfig{Name: "relay", Every: time.Hour}, func(context.Context) error { return errors.New("down") })
			if err := r.SetDefaults(Telemetry{Reporter: host}); err != nil {
				t.Fatal(err)
			}
			s := serve(t, r)
			synctest.Wait()
			s.shutdown(t)
			if errs, _ := host.Get(); len(errs) != 0 || r.Stats().Failures == 0 {
				t.Errorf("reports %v after %d failures, want none after at least one", errs, r.Stats().Failures)
			}
		})
	})
}
