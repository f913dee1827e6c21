package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
)

// TestStopDuringAHungStart: a stop that arrives while a warmup step, a start hook or
// a Bind ignores its ctx (a migration stuck on a lock) ends the run within the logged
// worst case; the step is abandoned hooks.AbandonAfter after the stop, named in the
// report under abandoned, and the result is timeout (exit 1).
func TestStopDuringAHungStart(t *testing.T) {
	for _, c := range []struct{ stage, name string }{
		{"warmup", `warmup "migrate"`},
		{"pre_start", `pre_start hook "migrate"`},
		{"bind", `entrypoint "api" Bind`},
		{"post_start", `post_start hook "migrate"`},
	} {
		t.Run(c.stage, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release, entered := make(chan struct{}), make(chan struct{})
				defer func() {
					close(release)
					synctest.Wait() // the abandoned step ends before the test does
				}()
				hang := func(context.Context) error { close(entered); <-release; return nil }
				j := &journal{}
				api := newFake("api", j)
				reg := &hooks.Registry{}
				spec := host.AppSpec{Lifecycle: reg, Entrypoints: []host.Registration{{Entrypoint: api}},
					Budgets: host.Budgets{StepTimeout: 100 * time.Millisecond, DrainGrace: time.Second}}
				switch c.stage {
				case "warmup":
					spec.Warmups = []host.Step{{Name: "migrate", Start: hang}}
				case "pre_start":
					reg.AddPreStart("migrate", hang)
				case "bind":
					api.bind = hang
				case "post_start":
					reg.AddPostStart("migrate", hang)
				}
				core, logs := observer.New(zap.InfoLevel)
				spec.Telemetry.Logger = zap.New(core)
				x := start(t, j, spec)
				<-entered
				logged := x.Host().WorstCase()
				began := time.Now()
				x.Stop()
				err := x.Wait()
				took := time.Since(began)
				if took > logged.Total {
					t.Errorf("exit took %s, more than the logged worst case %s", took, logged)
				}
				if took < hooks.AbandonAfter {
					t.Errorf("exit took %s: the step was not given its unwind (%s)", took, hooks.AbandonAfter)
				}
				if !errors.Is(err, host.ErrShutdownTimeout) || host.ExitCode(err) != host.ExitFailure {
					t.Errorf("Run = %v (exit %d), want ErrShutdownTimeout, exit 1", err, host.ExitCode(err))
				}
				rep := logs.FilterMessage("shutdown report").All()
				if len(rep) != 1 {
					t.Fatalf("%d shutdown reports", len(rep))
				}
				m := rep[0].ContextMap()
				if m["result"] != "timeout" || !strings.Contains(strings.Join(toStrings(m["abandoned"]), ","), c.name) {
					t.Errorf("report result %v, abandoned %v; want timeout naming %s", m["result"], m["abandoned"], c.name)
				}
				if d, _ := m["start_unwind"].(time.Duration); d != hooks.AbandonAfter {
					t.Errorf("report start_unwind = %v, want the %s the step was waited for", m["start_unwind"], hooks.AbandonAfter)
				}
			})
		})
	}
}

func toStrings(v any) []string {
	var out []string
	if vs, ok := v.([]any); ok {
		for _, s := range vs {
			out = append(out, s.(string))
		}
	}
	return out
}
