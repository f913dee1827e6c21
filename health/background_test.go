package health_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

// started returns a started Monitor of checks over a Ready state, stopped at the end
// of the test.
func started(t *testing.T, cfg health.MonitorConfig) (*health.Monitor, *health.State) {
	t.Helper()
	st := ready()
	m, err := health.NewMonitor(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	return m, st
}

// A hung dependency never holds a probe: the answer comes from the last results, at
// once, saying "timed out" from the timeout on and "stale" after three intervals,
// and the hung check is not started again while its Health call has not returned.
func TestStartedMonitorAnswersFromStateWhileADependencyHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls, hung atomic.Int32
		var frozen atomic.Bool
		redis := health.CheckFunc(func(ctx context.Context) error {
			calls.Add(1)
			if frozen.Load() {
				hung.Add(1)
				<-release // a driver that ignores its ctx
			}
			return nil
		})
		m, _ := started(t, health.MonitorConfig{
			Checks:        map[string]health.Check{"redis": redis},
			CheckInterval: time.Second, CheckTimeout: 400 * time.Millisecond,
		})
		if err := m.AwaitFirst(t.Context()); err != nil {
			t.Fatal(err)
		}
		if a := get(t, m, "/readyz"); a.answer.Status != health.AnswerOK {
			t.Fatalf("before the freeze: %s", a.body)
		}
		frozen.Store(true)
		time.Sleep(time.Second + time.Millisecond) // the second run began and hangs
		synctest.Wait()
		start := time.Now()
		a := get(t, m, "/readyz")
		if time.Since(start) != 0 || a.answer.Status != health.AnswerOK {
			t.Fatalf("while the check runs: %s after %s, want the last result at once", a.body, time.Since(start))
		}
		time.Sleep(400 * time.Millisecond) // its timeout
		synctest.Wait()
		start = time.Now()
		a = get(t, m, "/readyz")
		if time.Since(start) != 0 || a.code != 200 || a.answer.Status != health.AnswerDegraded ||
			a.answer.Checks["redis"].Detail != "timed out after 400ms" || a.answer.Checks["redis"].Stale {
			t.Fatalf("at the timeout: %d %s, want degraded, timed out, at once", a.code, a.body)
		}
		time.Sleep(3 * time.Second) // three intervals without an answer
		synctest.Wait()
		a = get(t, m, "/readyz")
		if r := a.answer.Checks["redis"]; !r.Stale || r.OK || r.Detail != "timed out after 400ms" {
			t.Fatalf("after three intervals: %s, want stale", a.body)
		}
		if n := hung.Load(); n != 1 {
			t.Fatalf("%d runs reached the hung dependency, want 1 at a time", n)
		}
		frozen.Store(false)
		close(release)
		synctest.Wait() // the hung run returns; the next run is due at once
		a = get(t, m, "/readyz")
		if r := a.answer.Checks["redis"]; a.answer.Status != health.AnswerOK || !r.OK || r.Stale {
			t.Fatalf("after the thaw: %s, want ok", a.body)
		}
	})
}

// The number of probes never changes the load on a dependency: the check runs once
// per interval, whatever the probes, Evaluate and subscriptions.
func TestProbesDoNotRunChecks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		m, _ := started(t, health.MonitorConfig{
			Checks: map[string]health.Check{"db": health.CheckFunc(func(context.Context) error {
				calls.Add(1)
				return nil
			})},
			CheckInterval: time.Second, CheckTimeout: 100 * time.Millisecond,
		})
		v := subscribe(t, m)
		v.next(t)
		for range 10 {
			for range 100 {
				get(t, m, "/readyz")
				m.Evaluate(t.Context())
			}
			time.Sleep(time.Second)
			synctest.Wait()
		}
		if n := calls.Load(); n != 11 { // at once, then once a second for 10 s
			t.Fatalf("the check ran %d times under 2000 answers in 10 s, want 11 (once per interval)", n)
		}
	})
}

// A failure is logged when it begins and a recovery when it ends: not per probe, nor
// per run.
func TestFailuresAreLoggedPerChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, logs := observed()
		var down atomic.Bool
		down.Store(true)
		m, _ := started(t, health.MonitorConfig{
			Checks: map[string]health.Check{"redis": health.CheckFunc(func(context.Context) error {
				if down.Load() {
					return errors.New("dial tcp: connection refused")
				}
				return nil
			})},
			CheckInterval: 200 * time.Millisecond, CheckTimeout: 100 * time.Millisecond, Logger: log,
		})
		for range 30 { // 6 s: 30 runs, 300 probes
			for range 10 {
				get(t, m, "/readyz")
			}
			time.Sleep(200 * time.Millisecond)
			synctest.Wait()
		}
		down.Store(false)
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		failed := logs.FilterMessage("readiness check failed").Len()
		recovered := logs.FilterMessage("readiness check recovered").Len()
		if failed != 1 || recovered != 1 || logs.Len() != 2 {
			t.Fatalf("%d lines (%d failed, %d recovered), want one of each: %v", logs.Len(), failed, recovered, logs.All())
		}
	})
}

// Startup waits for the first result of each check, so a failing gating check is
// never reported ready for a moment.
func TestAwaitFirstGivesEveryCheckItsFirstResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := health.Gating(health.CheckFunc(func(ctx context.Context) error {
			time.Sleep(300 * time.Millisecond)
			return errors.New("sidecar down")
		}))
		st := ready()
		m, err := health.NewMonitor(health.MonitorConfig{Checks: map[string]health.Check{"sidecar": slow}}, st)
		if err != nil {
			t.Fatal(err)
		}
		m.Start()
		defer m.Stop()
		if a := get(t, m, "/readyz"); a.code != 503 || a.answer.Checks["sidecar"].Detail != "pending" {
			t.Fatalf("before the first result: %d %s, want 503 pending", a.code, a.body)
		}
		start := time.Now()
		if err := m.AwaitFirst(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 300*time.Millisecond {
			t.Fatalf("AwaitFirst returned after %s, want 300ms", d)
		}
		if a := get(t, m, "/readyz"); a.code != 503 || a.answer.Status != health.AnswerFailing {
			t.Fatalf("after the first result: %d %s, want 503 failing", a.code, a.body)
		}
	})
}

// A check's own timing (Every) replaces the Monitor's; Recheck runs it at once.
func TestEveryAndRecheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fast, slow atomic.Int32
		m, _ := started(t, health.MonitorConfig{
			Checks: map[string]health.Check{
				"fast": health.Every(health.CheckFunc(func(context.Context) error { fast.Add(1); return nil }), 100*time.Millisecond, 50*time.Millisecond),
				"slow": health.Gating(health.Every(health.CheckFunc(func(context.Context) error { slow.Add(1); return nil }), 10*time.Second, 0)),
			},
		})
		time.Sleep(time.Second - time.Millisecond)
		synctest.Wait()
		if f, s := fast.Load(), slow.Load(); f != 10 || s != 1 {
			t.Fatalf("in 1s: fast ran %d times, slow %d; want 10 and 1", f, s)
		}
		if a := get(t, m, "/readyz"); !a.answer.Checks["slow"].Gates {
			t.Fatalf("Every lost the Gating declaration: %s", a.body)
		}
		m.Recheck("slow")
		synctest.Wait()
		if s := slow.Load(); s != 2 {
			t.Fatalf("after Recheck slow ran %d times, want 2", s)
		}
	})
}

// Bad timing is one ConfigError naming each field; zero takes the default.
func TestCheckTimingIsValidated(t *testing.T) {
	c := health.CheckFunc(ok)
	_, err := health.NewMonitor(health.MonitorConfig{
		CheckInterval: -time.Second,
		Checks: map[string]health.Check{
			"neg":   health.Every(c, -time.Second, -time.Second),
			"long":  health.Every(c, time.Second, time.Second),
			"dflt":  health.Every(c, time.Second, 0), // the default timeout, 2s, is not shorter
			"right": health.Every(c, time.Second, 500*time.Millisecond),
		},
	}, ready())
	var ce *fault.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *fault.ConfigError", err)
	}
	for _, want := range []string{
		"CheckInterval: must not be negative",
		`Checks["neg"].Interval: must not be negative`,
		`Checks["neg"].Timeout: must not be negative`,
		`Checks["long"].Timeout: 1s must be shorter than the check's interval, 1s`,
		`Checks["dflt"].Timeout: 2s must be shorter`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "right") {
		t.Errorf("error %q names a valid check", err)
	}
	if _, err := health.NewMonitor(health.MonitorConfig{CheckTimeout: 5 * time.Second}, ready()); err == nil ||
		!strings.Contains(err.Error(), "CheckTimeout: 5s must be shorter than CheckInterval, 5s") {
		t.Errorf("a timeout equal to the default interval: err = %v", err)
	}
	if _, err := health.NewMonitor(health.MonitorConfig{Checks: map[string]health.Check{"c": c}}, ready()); err != nil {
		t.Errorf("zero timing: %v, want the defaults", err)
	}
}
