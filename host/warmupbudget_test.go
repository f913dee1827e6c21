package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

func TestWarmupBudget(t *testing.T) {
	for _, c := range []struct {
		name   string
		honour bool
	}{{"a step that honours its ctx", true}, {"a step that ignores its ctx", false}} {
		t.Run(c.name+" fails startup at the budget, named", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release)
				j := &journal{}
				spec := host.AppSpec{
					Entrypoints: []host.Registration{{Entrypoint: newFake("http", j)}},
					Warmups: []host.Step{
						{Name: "cache", Start: func(context.Context) error { return nil }},
						{Name: "db", Priority: 1, Start: func(ctx context.Context) error {
							if c.honour {
								<-ctx.Done()
								return ctx.Err()
							}
							<-release // accepts the connection, never answers
							return nil
						}},
					},
					Budgets: host.Budgets{WarmupTimeout: 30 * time.Second},
				}
				began := time.Now()
				x := start(t, j, spec)
				err := x.Wait()
				var se *host.StartupError
				if !errors.As(err, &se) || se.Stage != host.StageWarmup || !errors.Is(err, host.ErrWarmupTimeout) ||
					!strings.Contains(err.Error(), `warmup "db"`) || host.ExitCode(err) != 1 {
					t.Fatalf("Run = %v, want a warmup StartupError naming db and wrapping ErrWarmupTimeout", err)
				}
				took := time.Since(began)
				if took < 30*time.Second || took > 31*time.Second+time.Millisecond {
					t.Errorf("startup failed after %s, want the 30s budget (+1s for a step ignoring ctx)", took)
				}
				if len(j.get()) != 0 {
					t.Errorf("entrypoints were touched: %v", j.get())
				}
			})
		})
	}

	t.Run("the default is a minute; SW_WARMUP_TIMEOUT overrides it; negative is a ConfigError", func(t *testing.T) {
		x := hosttest.New(t, host.AppSpec{ServiceName: "x"})
		if got := x.Host().Budgets().WarmupTimeout; got != time.Minute {
			t.Errorf("default %s", got)
		}
		h, err := host.New(host.AppSpec{ServiceName: "x", Probes: probesOff(), Telemetry: quiet()}, env("SW_WARMUP_TIMEOUT", "5s"))
		if err != nil || h.Budgets().WarmupTimeout != 5*time.Second {
			t.Errorf("override: %v %v", h, err)
		}
		for _, c := range []struct {
			spec  host.Budgets
			env   []string
			field string
		}{
			{host.Budgets{WarmupTimeout: -time.Second}, nil, "Budgets.WarmupTimeout"},
			{host.Budgets{}, []string{"SW_WARMUP_TIMEOUT", "-1s"}, "SW_WARMUP_TIMEOUT (Budgets.WarmupTimeout)"},
		} {
			_, err := host.New(host.AppSpec{ServiceName: "x", Probes: probesOff(), Telemetry: quiet(), Budgets: c.spec}, env(c.env...))
			var ce *fault.ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) != 1 || !strings.HasPrefix(ce.Problems[0].String(), c.field+":") {
				t.Errorf("New = %v, want one problem naming %s", err, c.field)
			}
		}
	})
}
