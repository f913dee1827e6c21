package host_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
)

// marked is a fake entrypoint that declares its own marks, as a cron scheduler does.
type marked struct {
	*fake
	own fleet.Marks
}

func (m marked) Marks() fleet.Marks { return m.own }

func problems(t *testing.T, spec host.AppSpec) map[string]string {
	t.Helper()
	spec.ServiceName, spec.Telemetry = "x", quiet()
	spec.Probes = probesOff()
	_, err := host.New(spec, env())
	out := map[string]string{}
	if err == nil {
		return out
	}
	ce, ok := err.(*fault.ConfigError)
	if !ok {
		t.Fatalf("New = %v, want a ConfigError", err)
	}
	for _, p := range ce.Problems {
		out[p.Field] = p.Reason
	}
	return out
}

func TestMarksOneWay(t *testing.T) {
	unguarded := fleet.Marks{MutatesSharedState: true, RequiresLongRunning: true}
	t.Run("a registration cannot claim a guard the entrypoint denies", func(t *testing.T) {
		p := problems(t, host.AppSpec{Profile: fleet.Fleet, Entrypoints: []host.Registration{{
			Entrypoint: marked{newFake("cron", &journal{}), unguarded},
			Marks:      fleet.Marks{SingletonGuarded: true},
		}}})
		if !strings.Contains(p[`Entrypoints["cron"].Marks.SingletonGuarded`], "never lift") {
			t.Errorf("the lifted guard is not named: %v", p)
		}
		if why := p[`Entrypoints["cron"]`]; !strings.Contains(why, "OncePerFleet") {
			t.Errorf("the remedy for a scheduler is OncePerFleet: %q", why)
		}
	})

	t.Run("a registration may add a mark the entrypoint lacks", func(t *testing.T) {
		p := problems(t, host.AppSpec{Profile: fleet.Serverless, Entrypoints: []host.Registration{{
			Entrypoint: marked{newFake("loop", &journal{}), fleet.Marks{}},
			Marks:      fleet.Marks{RequiresLongRunning: true},
		}}})
		if !strings.Contains(p[`Entrypoints["loop"]`], "long-running") {
			t.Errorf("the added mark was ignored: %v", p)
		}
	})

	t.Run("an entrypoint guarded by its own marks is accepted", func(t *testing.T) {
		p := problems(t, host.AppSpec{Profile: fleet.Fleet, Entrypoints: []host.Registration{{
			Entrypoint: marked{newFake("cron", &journal{}), fleet.Marks{MutatesSharedState: true, SingletonGuarded: true}},
		}}})
		if len(p) != 0 {
			t.Errorf("refused: %v", p)
		}
	})

	t.Run("a step, hook or phase is told to use the fleet singleton", func(t *testing.T) {
		reg := &hooks.Registry{}
		mut := fleet.Marks{MutatesSharedState: true}
		reg.AddPreStart("migrate", func(context.Context) error { return nil }, mut)
		reg.AddDrainPhase(hooks.DrainPhase{Name: "handover", Marks: mut, Run: func(context.Context, time.Duration) error { return nil }})
		p := problems(t, host.AppSpec{Profile: fleet.Fleet, Lifecycle: reg,
			Warmups: []host.Step{{Name: "seed", Start: func(context.Context) error { return nil }, Marks: mut}}})
		for _, f := range []string{`Warmups["seed"]`, `Lifecycle.pre_start["migrate"]`, `Lifecycle.DrainPhases["handover"]`} {
			if !strings.Contains(p[f], "leader.NewSingleton") {
				t.Errorf("%s: %q, want the fleet singleton named", f, p[f])
			}
		}
	})

	t.Run("an unguarded entrypoint with registration marks only is told how to guard it", func(t *testing.T) {
		p := problems(t, host.AppSpec{Profile: fleet.Fleet, Entrypoints: []host.Registration{{
			Entrypoint: newFake("worker", &journal{}), Marks: fleet.Marks{MutatesSharedState: true},
		}}})
		if why := p[`Entrypoints["worker"]`]; !strings.Contains(why, "OncePerFleet") || !strings.Contains(why, "leadership") {
			t.Errorf("%q", why)
		}
	})
}
