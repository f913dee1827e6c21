package host_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

func TestBudgetsFit(t *testing.T) {
	figure := func(w host.WorstCase, name string) time.Duration {
		for _, f := range w.Figures {
			if f.Name == name {
				return f.Value
			}
		}
		return 0
	}
	phase := func(name string, max time.Duration) hooks.DrainHook {
		return hooks.DrainHook{Name: name, MaxDuration: max, Run: func(context.Context, time.Duration) error { return nil }}
	}
	build := func(t *testing.T, phases ...hooks.DrainHook) *host.Host {
		lc := &hooks.Registry{}
		for _, p := range phases {
			lc.AddDrainHook(p)
		}
		h, err := host.New(host.AppSpec{ServiceName: "x", Probes: probesOff(), Lifecycle: lc,
			Budgets:   host.Budgets{DrainHooksBudget: 20 * time.Second},
			Telemetry: host.TelemetryConfig{Logger: zap.NewNop()}}, env())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	t.Run("drain hooks count at their declared MaxDuration when it is shorter than the budget", func(t *testing.T) {
		h := build(t, phase("a", 2*time.Second), phase("b", 3*time.Second))
		if got := figure(h.WorstCase(), "drain_hooks"); got != 7*time.Second {
			t.Errorf("drain_hooks = %s, want 7s ((2s + 1s) + (3s + 1s): each may ignore its cancellation)", got)
		}
		h = build(t, phase("a", 2*time.Second), phase("unbounded", 0))
		if got := figure(h.WorstCase(), "drain_hooks"); got != 21*time.Second {
			t.Errorf("drain_hooks = %s with a phase of no MaxDuration, want the 20s budget + 1s", got)
		}
	})

	t.Run("under Kubernetes without a grace period, a worst case over 30s is warned about", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			delay string
			warn  bool
		}{{"fits", "1s", false}, {"does not fit", "20s", true}} {
			core, logs := observer.New(zap.WarnLevel)
			h, err := host.New(host.AppSpec{ServiceName: "x", Probes: probesOff(),
				Entrypoints: []host.Registration{{Entrypoint: newFake("a", &journal{})}},
				Telemetry:   host.TelemetryConfig{Logger: zap.New(core)}},
				env("KUBERNETES_SERVICE_HOST", "10.0.0.1", "SW_DRAIN_DELAY", tc.delay))
			if err != nil {
				t.Fatal(err)
			}
			runStopped(t, h)
			got := logs.FilterMessageSnippet("without TERMINATION_GRACE_PERIOD").All()
			if (len(got) == 1) != tc.warn {
				t.Errorf("%s (worst case %s): %d warnings, want warned=%v", tc.name, h.WorstCase().Total, len(got), tc.warn)
			}
			if tc.warn && len(got) == 1 && got[0].ContextMap()["figures"] == nil {
				t.Errorf("the warning does not name the figures: %v", got[0].ContextMap())
			}
		}
	})

	t.Run("a service shaped like the example fits Kubernetes' default grace period at the default budgets", func(t *testing.T) {
		// The example's shape: six entrypoints (http, grpc, kafka, cron, leader,
		// ticker), one drain hook, a post_start and a pre_shutdown hook, an fx
		// container, an error reporter and the probe listener; every budget left at
		// its default, no DrainDelay.
		shaped := func(p hooks.DrainHook) host.WorstCase {
			lc := &hooks.Registry{}
			lc.AddPostStart("print-hints", func(context.Context) error { return nil })
			lc.AddPreShutdown("final-report", func(context.Context) error { return nil })
			lc.AddDrainHook(p)
			var regs []host.Registration
			for _, name := range []string{"http", "grpc", "kafka", "cron", "leader", "ticker"} {
				regs = append(regs, host.Registration{Entrypoint: newFake(name, &journal{})})
			}
			h, err := host.New(host.AppSpec{ServiceName: "orders", Entrypoints: regs, Lifecycle: lc,
				Container: hostfx.Container(),
				Probes:    health.ListenerConfig{Addr: "127.0.0.1:0"},
				Telemetry: host.TelemetryConfig{Logger: zap.NewNop(), Reporter: &reported{}}}, env())
			if err != nil {
				t.Fatal(err)
			}
			return h.WorstCase()
		}
		k8s := 30 * time.Second
		w := shaped(phase("deregister", 500*time.Millisecond)) // the example's phase
		if !w.Fits(k8s) {
			t.Errorf("the example's shape at defaults: worst case %s does not fit %s with 10%% headroom: %s", w.Total, k8s, w)
		}
		t.Logf("example-shaped worst case at defaults: %s", w)
		w = shaped(phase("deregister", 0)) // a phase that may take the whole budget
		if w.Total > k8s {
			t.Errorf("with a phase of no MaxDuration: worst case %s is beyond %s: %s", w.Total, k8s, w)
		}
		t.Logf("with a phase of no MaxDuration: %s", w)
	})
}
