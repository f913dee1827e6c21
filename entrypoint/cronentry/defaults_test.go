package cronentry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
)

func TestSetDefaults(t *testing.T) {
	failing := []Job{{Name: "job", Every: time.Second, Run: func(context.Context, Tick) error { return errors.New("boom") }}}

	t.Run("the Host's logger and registry are used when no option was given", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			core, logs := observer.New(zap.InfoLevel)
			reg := prometheus.NewRegistry()
			x := start(t, failing, func(s *Scheduler) {
				s.SetDefaults(entrypoint.Telemetry{Logger: zap.New(core), Registerer: reg})
			})
			time.Sleep(1500 * time.Millisecond)
			x.shutdown()
			if n := logs.FilterMessage("cron run failed").Len(); n == 0 {
				t.Error("the run's failure did not reach the Host's logger")
			}
			if n := series(t, reg, "servicewright_cron_runs_total"); n == 0 {
				t.Error("no runs_total series on the Host's registry")
			}
		})
	})

	t.Run("an option wins over the Host's default", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mine, mineLogs := observer.New(zap.InfoLevel)
			host, hostLogs := observer.New(zap.InfoLevel)
			myReg, hostReg := prometheus.NewRegistry(), prometheus.NewRegistry()
			x := start(t, failing, func(s *Scheduler) {
				s.SetDefaults(entrypoint.Telemetry{Logger: zap.New(host), Registerer: hostReg})
			}, WithTelemetry(entrypoint.Telemetry{Logger: zap.New(mine), Registerer: myReg}))
			time.Sleep(1500 * time.Millisecond)
			x.shutdown()
			if mineLogs.FilterMessage("cron run failed").Len() == 0 || hostLogs.Len() != 0 {
				t.Errorf("logs: %d to WithTelemetry's, %d to the Host's; want all to WithTelemetry's",
					mineLogs.Len(), hostLogs.Len())
			}
			if n := series(t, hostReg, ""); n != 0 {
				t.Errorf("%d series on the Host's registry, want none", n)
			}
		})
	})

	t.Run("a registration that fails is SetDefaults' error", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		if _, err := New(Config{}, failing, WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{}, failing)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetDefaults(entrypoint.Telemetry{Registerer: reg}); err == nil {
			t.Fatal("SetDefaults = nil, want the registration's failure")
		}
	})
}

// series counts the series of the metric called name (any metric when name is
// empty) that reg gathers.
func series(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if name == "" || f.GetName() == name {
			n += len(f.GetMetric())
		}
	}
	return n
}
