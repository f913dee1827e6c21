package cronentry

import (
	"context"
	"github.com/servicewright/servicewright/entrypoint"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		run := func(context.Context, Tick) error {
			time.Sleep(1500 * time.Millisecond) // the next tick is skipped
			return nil
		}
		x := start(t, []Job{{Name: "job", Every: time.Second, Run: run}}, nil, WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
		time.Sleep(5*time.Second + time.Millisecond) // ticks 1 (runs to 2.5), 2 skipped, 3 (to 4.5), 4 skipped, 5
		x.shutdown()

		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		runs := map[string]float64{}
		var observed uint64
		for _, f := range families {
			for _, m := range f.GetMetric() {
				labels := labelMap(m)
				if labels["entrypoint"] != "cron" || labels["cron_job"] != "job" {
					t.Errorf("%s has labels %v, want entrypoint=cron job=job", f.GetName(), labels)
				}
				switch f.GetName() {
				case "servicewright_cron_runs_total":
					runs[labels["outcome"]] = m.GetCounter().GetValue()
				case "servicewright_cron_run_duration_seconds":
					observed = m.GetHistogram().GetSampleCount()
				default:
					t.Errorf("unexpected metric %s", f.GetName())
				}
			}
		}
		want := map[string]float64{
			"ok": 3, "failed": 0, "panicked": 0, "cancelled": 0, "skipped_overlap": 2,
			"skipped_other_replica": 0, "skipped_missed": 0, "skipped_draining": 0, "lock_error": 0,
		}
		for o, n := range want {
			if got, present := runs[o]; !present || got != n {
				t.Errorf("runs_total{outcome=%q} = %v (present %v), want %v", o, got, present, n)
			}
		}
		if observed != 3 {
			t.Errorf("run_duration_seconds count = %d, want 3 (skips are not runs)", observed)
		}
	})
}

func TestMetricsCountPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		x := start(t, []Job{{Name: "job", Every: time.Second, Run: func(context.Context, Tick) error { panic("boom") }}},
			nil, WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
		time.Sleep(2*time.Second + time.Millisecond)
		x.shutdown()
		families, _ := reg.Gather()
		for _, f := range families {
			for _, m := range f.GetMetric() {
				if f.GetName() == "servicewright_cron_runs_total" && labelMap(m)["outcome"] == "panicked" {
					if v := m.GetCounter().GetValue(); v != 2 {
						t.Errorf("runs_total{outcome=panicked} = %v, want 2", v)
					}
					return
				}
			}
		}
		t.Error("no runs_total{outcome=panicked} series")
	})
}

func TestMetricsRegisterTwiceFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	jobs := []Job{{Name: "job", Every: time.Second, Run: func(context.Context, Tick) error { return nil }}}
	if _, err := New(Config{Name: "cron"}, jobs, WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Name: "cron"}, jobs, WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err == nil {
		t.Error("a second Scheduler with the same name on one registry: New = nil, want a registration error")
	}
	if _, err := New(Config{Name: "other"}, jobs, WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err != nil {
		t.Errorf("a Scheduler with another name: New = %v", err)
	}
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
