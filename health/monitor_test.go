package health_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

// verdicts collects what a subscription hands out.
type verdicts struct{ ch chan health.Answer }

func subscribe(t *testing.T, m *health.Monitor) *verdicts {
	t.Helper()
	v := &verdicts{ch: make(chan health.Answer, 16)}
	t.Cleanup(m.Subscribe(func(r health.Answer) { v.ch <- r }))
	return v
}

func (v *verdicts) next(t *testing.T) health.Answer {
	t.Helper()
	select {
	case r := <-v.ch:
		return r
	case <-time.After(time.Minute):
		t.Fatal("no verdict")
		return health.Answer{}
	}
}

func TestMonitorFollowsTheStateAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var st health.State
		m, err := health.NewMonitor(health.MonitorConfig{}, &st)
		if err != nil {
			t.Fatal(err)
		}
		v := subscribe(t, m)
		if r := v.next(t); r.Status != health.AnswerUnavailable || r.Serving() {
			t.Fatalf("first verdict %+v, want unavailable", r)
		}
		st.Set(health.StatusReady)
		if r := v.next(t); !r.Serving() {
			t.Fatalf("verdict after Ready %+v, want ok", r)
		}
		start := time.Now()
		st.Set(health.StatusDraining)
		if r := v.next(t); r.Status != health.AnswerDraining {
			t.Fatalf("verdict after Draining %+v, want draining", r)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("draining seen after %s, want at once", d)
		}
	})
}

// A check that hangs must not hold back the news that readiness was withdrawn.
func TestMonitorWithdrawalCancelsARunningCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := ready()
		var calls atomic.Int32
		slow := health.CheckFunc(func(ctx context.Context) error {
			if calls.Add(1) == 1 {
				return nil
			}
			<-ctx.Done()
			return ctx.Err()
		})
		m, err := health.NewMonitor(health.MonitorConfig{
			Checks: map[string]health.Check{"slow": slow}, CheckTimeout: 900 * time.Millisecond, CheckInterval: time.Second,
		}, st)
		if err != nil {
			t.Fatal(err)
		}
		v := subscribe(t, m)
		if r := v.next(t); !r.Serving() {
			t.Fatalf("first verdict %+v, want ok", r)
		}
		time.Sleep(1500 * time.Millisecond) // the second run of the check is hanging now
		synctest.Wait()
		start := time.Now()
		st.Set(health.StatusDraining)
		if r := v.next(t); r.Status != health.AnswerDraining {
			t.Fatalf("verdict %+v, want draining", r)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("draining seen after %s, want at once", d)
		}
	})
}

func TestMonitorRechecksWhileReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		check := health.CheckFunc(func(context.Context) error {
			if down.Load() {
				return errors.New("down")
			}
			return nil
		})
		m, err := health.NewMonitor(health.MonitorConfig{
			Checks: map[string]health.Check{"db": check}, CheckInterval: time.Second, CheckTimeout: 500 * time.Millisecond,
		}, ready())
		if err != nil {
			t.Fatal(err)
		}
		v := subscribe(t, m)
		if r := v.next(t); !r.Serving() {
			t.Fatalf("first verdict %+v", r)
		}
		down.Store(true)
		start := time.Now()
		if r := v.next(t); r.Status != health.AnswerDegraded || r.Checks["db"].OK {
			t.Fatalf("verdict %+v, want degraded", r)
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("degraded seen after %s, want one CheckInterval", d)
		}
		down.Store(false)
		if r := v.next(t); !r.Serving() {
			t.Fatalf("verdict %+v, want ok again", r)
		}
	})
}

// A Source that is not a Notifier is polled.
func TestMonitorPollsOtherSources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := ready()
		src := health.FromFunc(func() *health.State { return st })
		m, err := health.NewMonitor(health.MonitorConfig{PollInterval: 10 * time.Millisecond}, src)
		if err != nil {
			t.Fatal(err)
		}
		v := subscribe(t, m)
		if r := v.next(t); !r.Serving() {
			t.Fatalf("first verdict %+v", r)
		}
		start := time.Now()
		st.Set(health.StatusDraining)
		if r := v.next(t); r.Status != health.AnswerDraining {
			t.Fatalf("verdict %+v", r)
		}
		if d := time.Since(start); d > 10*time.Millisecond {
			t.Fatalf("draining seen after %s, want within PollInterval", d)
		}
	})
}

// Evaluate gives the readiness probe's verdict.
func TestMonitorEvaluateMatchesReadiness(t *testing.T) {
	failing := health.CheckFunc(func(context.Context) error { return errors.New("x") })
	checks := map[string]health.Check{"a": failing}
	st := ready()
	m, err := health.NewMonitor(health.MonitorConfig{Checks: checks}, st)
	if err != nil {
		t.Fatal(err)
	}
	probe := get(t, newReadiness(t, st, health.ReadinessConfig{Checks: checks}), "/readyz")
	if got := m.Evaluate(t.Context()); got.Status != probe.answer.Status || got.Checks["a"] != probe.answer.Checks["a"] {
		t.Fatalf("Evaluate %+v, probe %+v", got, probe.answer)
	}
}

func TestNewMonitorRefusesBadConfig(t *testing.T) {
	_, err := health.NewMonitor(health.MonitorConfig{
		Checks: map[string]health.Check{"": nil}, CheckTimeout: -1, CheckInterval: -1, PollInterval: -1,
	}, nil)
	ce, ok := errors.AsType[*fault.ConfigError](err)
	if !ok {
		t.Fatalf("err %v, want *fault.ConfigError", err)
	}
	fields := map[string]bool{}
	for _, p := range ce.Problems {
		fields[p.Field] = true
	}
	for _, f := range []string{"Source", "CheckTimeout", "CheckInterval", "PollInterval", `Checks[""]`} {
		if !fields[f] {
			t.Errorf("no problem for %s in %v", f, err)
		}
	}
}

func TestMonitorAddCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var st health.State
		st.Set(health.StatusReady)
		m, err := health.NewMonitor(health.MonitorConfig{CheckInterval: time.Second, CheckTimeout: 500 * time.Millisecond}, &st)
		if err != nil {
			t.Fatal(err)
		}
		v := subscribe(t, m)
		if r := v.next(t); r.Status != health.AnswerOK {
			t.Fatalf("without checks: %+v", r)
		}
		down := health.Gating(health.CheckFunc(func(context.Context) error { return errors.New("sidecar gone") }))
		if err := m.AddCheck("sidecar", down); err != nil {
			t.Fatal(err)
		}
		if r := v.next(t); r.Status != health.AnswerFailing || r.Checks["sidecar"].OK {
			t.Errorf("a subscription after AddCheck of a failing gating check: %+v", r)
		}
		for _, name := range []string{"sidecar", "", "a,b"} {
			_, ok := errors.AsType[*fault.ConfigError](m.AddCheck(name, down))
			if !ok {
				t.Errorf("AddCheck(%q) was accepted", name)
			}
		}
		if _, ok := errors.AsType[*fault.ConfigError](m.AddCheck("nil", nil)); !ok {
			t.Error("AddCheck of a nil check was accepted")
		}
		if r := m.Evaluate(t.Context()); len(r.Checks) != 1 {
			t.Errorf("refused checks were added: %+v", r)
		}
	})
}
