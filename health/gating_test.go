package health_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/health"
)

// Readiness is about this replica: a failing check on a shared dependency degrades
// the status (200 "degraded", the check named, a log line) and keeps the replica in
// rotation; a check declared with Gating withdraws readiness (503 "failing").
func TestReadinessSharedDegradesGatingWithdraws(t *testing.T) {
	down := health.CheckFunc(func(context.Context) error { return errors.New("connection refused") })
	up := health.CheckFunc(func(context.Context) error { return nil })

	t.Run("a failing shared check degrades without withdrawing readiness", func(t *testing.T) {
		core, logs := observer.New(zap.DebugLevel)
		reg := prometheus.NewPedanticRegistry()
		h := newReadiness(t, ready(), health.ReadinessConfig{Logger: zap.New(core), Registerer: reg,
			Checks: map[string]health.Check{"postgres": down, "disk": health.Gating(up)}})
		a := get(t, h, "/readyz")
		if a.code != 200 || a.answer.Status != health.AnswerDegraded {
			t.Fatalf("got %d %s, want 200 degraded", a.code, a.body)
		}
		if got := a.answer.Checks["postgres"]; got.OK || got.Gates {
			t.Errorf("postgres entry %+v, want a failing check that does not gate", got)
		}
		if got := a.answer.Checks["disk"]; !got.OK || !got.Gates || !strings.Contains(a.body, `"gates":true`) {
			t.Errorf("disk entry %+v in %s, want a passing check marked gates", got, a.body)
		}
		if !a.answer.Serving() {
			t.Error("a degraded answer is not Serving: transports would withdraw the replica")
		}
		want := `
# HELP servicewright_readiness_check_failing 1 while the readiness check's last run failed. gates="false": a shared dependency, readiness degraded but kept; gates="true": readiness withdrawn.
# TYPE servicewright_readiness_check_failing gauge
servicewright_readiness_check_failing{check="disk",gates="true"} 0
servicewright_readiness_check_failing{check="postgres",gates="false"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "servicewright_readiness_check_failing"); err != nil {
			t.Error(err)
		}
		line := logs.FilterMessage("readiness check failed").All()
		if len(line) != 1 || line[0].ContextMap()["check"] != "postgres" || line[0].ContextMap()["readiness"] != "degraded" {
			t.Errorf("log lines %v, want one naming postgres as degrading readiness", logs.All())
		}
	})

	t.Run("a failing gating check withdraws readiness", func(t *testing.T) {
		h := newReadiness(t, ready(), health.ReadinessConfig{
			Checks: map[string]health.Check{"postgres": down, "sidecar": health.Gating(down)}})
		a := get(t, h, "/readyz")
		if a.code != 503 || a.answer.Status != health.AnswerFailing || a.answer.Serving() {
			t.Fatalf("got %d %s, want 503 failing", a.code, a.body)
		}
		if got := a.answer.Checks["sidecar"]; got.OK || !got.Gates {
			t.Errorf("sidecar entry %+v", got)
		}
	})

	t.Run("the Monitor says the same", func(t *testing.T) {
		for _, c := range []struct {
			check   health.Check
			status  string
			serving bool
		}{{down, health.AnswerDegraded, true}, {health.Gating(down), health.AnswerFailing, false}} {
			m, err := health.NewMonitor(health.MonitorConfig{Checks: map[string]health.Check{"db": c.check}}, ready())
			if err != nil {
				t.Fatal(err)
			}
			if r := m.Evaluate(t.Context()); r.Status != c.status || r.Serving() != c.serving {
				t.Errorf("Evaluate = %+v, want %s (serving %t)", r, c.status, c.serving)
			}
		}
	})

	t.Run("Gating of nil is nil and refused", func(t *testing.T) {
		if health.Gating(nil) != nil {
			t.Fatal("Gating(nil) is not nil")
		}
		if _, err := health.NewReadiness(health.ReadinessConfig{Checks: map[string]health.Check{"x": health.Gating(nil)}}, ready()); err == nil {
			t.Error("a nil gating check was accepted")
		}
		if g := health.Gating(up); !health.IsGating(health.Gating(g)) || health.IsGating(up) {
			t.Error("IsGating wrong")
		}
	})
}
