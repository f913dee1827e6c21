package health_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

func TestListenerConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   health.ListenerConfig
		field string // "" when valid
	}{
		{"zero value is valid", health.ListenerConfig{}, ""},
		{"explicit address", health.ListenerConfig{Addr: "127.0.0.1:8079", CheckTimeout: time.Second}, ""},
		{"port zero", health.ListenerConfig{Addr: ":0"}, ""},
		{"negative timeout", health.ListenerConfig{CheckTimeout: -time.Millisecond}, "CheckTimeout"},
		{"no port", health.ListenerConfig{Addr: "localhost"}, "Addr"},
		{"named port", health.ListenerConfig{Addr: ":http"}, "Addr"},
		{"port out of range", health.ListenerConfig{Addr: ":70000"}, "Addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || len(ce.Problems) != 1 || ce.Problems[0].Field != tc.field {
				t.Fatalf("Validate = %v, want one problem on %s", err, tc.field)
			}
		})
	}
	err := health.ListenerConfig{Addr: "nope", CheckTimeout: -1}.Validate()
	if ce, ok := errors.AsType[*fault.ConfigError](err); !ok || len(ce.Problems) != 2 {
		t.Errorf("Validate of two bad fields = %v, want both named", err)
	}
}

// TestMonitorServesTheProbe: the Monitor's ServeHTTP is /readyz over the Monitor's
// own checks, including one added later, and sets the failing gauge.
func TestMonitorServesTheProbe(t *testing.T) {
	reg := prometheus.NewRegistry()
	down := health.CheckFunc(func(context.Context) error { return errors.New("refused") })
	var st health.State
	m, err := health.NewMonitor(health.MonitorConfig{Checks: map[string]health.Check{"db": down}, Registerer: reg}, &st)
	if err != nil {
		t.Fatal(err)
	}
	if a := get(t, m, "/readyz"); a.code != 503 || a.answer.Status != health.AnswerUnavailable || len(a.answer.Checks) != 0 {
		t.Errorf("before Ready: %d %s", a.code, a.body)
	}
	st.Set(health.StatusReady)
	if err := m.AddCheck("spool", health.Gating(health.CheckFunc(ok))); err != nil {
		t.Fatal(err)
	}
	a := get(t, m, "/readyz")
	if a.code != 200 || a.answer.Status != health.AnswerDegraded || a.answer.Checks["db"].OK || !a.answer.Checks["spool"].Gates {
		t.Errorf("Ready, db down: %d %s; want 200 degraded naming db and the added spool", a.code, a.body)
	}
	if rep := m.Evaluate(context.Background()); rep.Status != a.answer.Status || len(rep.Checks) != 2 {
		t.Errorf("Evaluate = %+v, the probe said %s", rep, a.body)
	}
	if a := get(t, m, "/readyz?exclude=db"); a.code != 200 || a.answer.Status != health.AnswerOK {
		t.Errorf("?exclude=db: %d %s", a.code, a.body)
	}
	if got := failing(t, reg, "db"); got != 1 {
		t.Errorf("servicewright_readiness_check_failing{check=\"db\"} = %v, want 1", got)
	}
	st.Set(health.StatusDraining)
	if a := get(t, m, "/readyz"); a.code != 503 || a.answer.Status != health.AnswerDraining {
		t.Errorf("draining: %d %s", a.code, a.body)
	}
}

func TestMonitorRegistererRefusalIsAConfigError(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := health.NewMonitor(health.MonitorConfig{Registerer: reg}, ready()); err != nil {
		t.Fatal(err)
	}
	_, err := health.NewMonitor(health.MonitorConfig{Registerer: reg}, ready())
	if ce, ok := errors.AsType[*fault.ConfigError](err); !ok || ce.Problems[0].Field != "Registerer" {
		t.Errorf("a second Monitor on the same registry = %v, want a problem naming Registerer", err)
	}
}

// failing returns the gauge's value for check, or -1 when it has none.
func failing(t *testing.T, reg *prometheus.Registry, check string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "servicewright_readiness_check_failing" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "check" && lp.GetValue() == check {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}
