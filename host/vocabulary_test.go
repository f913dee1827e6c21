package host_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

// TestOneVocabulary holds the budget line, the shutdown report, the stage metrics and
// /debug/lifecycle to the same stage names.
func TestOneVocabulary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.InfoLevel)
		reg := &hooks.Registry{}
		ok := func(context.Context) error { return nil }
		reg.AddPreShutdown("pre", ok)
		reg.AddPostShutdown("post", ok)
		reg.AddDrainHook(hooks.DrainHook{Name: "p", Run: func(context.Context, time.Duration) error { return nil }})
		x := start(t, &journal{}, host.AppSpec{
			Entrypoints: []host.Registration{{Entrypoint: newFake("a", &journal{})}},
			Warmups:     []host.Step{{Name: "w", Start: ok, Stop: ok}},
			Lifecycle:   reg,
			Container:   hostfx.Container(fx.Invoke(func() {})),
			Budgets:     host.Budgets{DrainDelay: time.Second},
			Telemetry:   host.TelemetryConfig{Logger: zap.New(core)},
		})
		x.WaitStage(host.StageServe)
		if got := x.Host().Snapshot().Stage; got != host.StageServe.String() {
			t.Errorf("/debug/lifecycle stage = %q", got)
		}
		x.Stop()
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
		report := logs.FilterMessage("shutdown report").All()[0].ContextMap()
		mfs, err := x.Host().Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		labels := map[string]bool{}
		for _, mf := range mfs {
			if mf.GetName() != "servicewright_lifecycle_stage_duration_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					labels[l.GetValue()] = true
				}
			}
		}
		for _, f := range x.Host().WorstCase().Figures {
			if _, ok := report[f.Name]; !ok {
				t.Errorf("budget figure %q is not a stage of the report: %v", f.Name, report)
			}
			if !labels[f.Name] {
				t.Errorf("budget figure %q is not a stage metric label: %v", f.Name, labels)
			}
		}
	})
}
