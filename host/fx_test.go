package host_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

type greeter struct{ word string }

// early is a second entrypoint type: the container holds one value per type.
type early struct{ *fake }

func TestContainer(t *testing.T) {
	t.Run("entrypoints, warmups, hooks and checks come from fx groups with their order", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			var sd *host.Shutdown
			var checks []string
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: newFake("spec", j), Order: 2}},
				Container: hostfx.Container(fx.Options(
					fx.Supply(&greeter{"hi"}),
					hostfx.Provide(host.Registration{Order: 3}, func(g *greeter) *fake { return newFake("late-"+g.word, j) }),
					hostfx.Provide(host.Registration{Order: 1, NonEssential: true}, func() (early, error) { return early{newFake("early", j)}, nil }),
					hostfx.Warmup(func(g *greeter) host.Step {
						return host.Step{Name: "warm", Start: func(context.Context) error { j.add("warm-%s", g.word); return nil }}
					}),
					hostfx.Hook(hooks.PreShutdown, "bye", func(g *greeter) hooks.Func {
						return func(context.Context) error { j.add("bye-%s", g.word); return nil }
					}),
					hostfx.Check("dep", func() health.Check { return health.CheckFunc(func(context.Context) error { return nil }) }),
					fx.Invoke(func(s *host.Shutdown, r *hooks.Registry) { sd = s; checks = append(checks, "supplied") }),
				)),
			})
			x.WaitStage(host.StageServe)
			if sd != x.Host().Shutdown() || len(checks) != 1 {
				t.Error("the container was not supplied the Host's shutdown handle and registry")
			}
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
			want := []string{"warm-hi", "early.Bind", "spec.Bind", "late-hi.Bind", "early.Drain", "late-hi.Drain",
				"spec.Drain", "late-hi.Stop", "spec.Stop", "early.Stop", "bye-hi"}
			if got := drainsSorted(names(j)); !slices.Equal(got, want) {
				t.Errorf("got %v\nwant %v", got, want)
			}
		})
	})

	t.Run("a wiring error is a ConfigError naming the container; nothing starts", func(t *testing.T) {
		_, err := host.New(host.AppSpec{ServiceName: "x", Telemetry: quiet(),
			Container: hostfx.Container(hostfx.Provide(host.Registration{Order: 1}, func(g *greeter) *fake { return nil }))}, env())
		var ce *fault.ConfigError
		if !errors.As(err, &ce) || ce.Problems[0].Field != "Container" || !strings.Contains(err.Error(), "greeter") {
			t.Fatalf("New = %v", err)
		}
	})

	t.Run("a constructor of the wrong shape is refused", func(t *testing.T) {
		_, err := host.New(host.AppSpec{ServiceName: "x", Telemetry: quiet(),
			Container: hostfx.Container(hostfx.Provide(host.Registration{Order: 1}, func() string { return "not an entrypoint" }))}, env())
		if err == nil || !strings.Contains(err.Error(), "does not implement entrypoint.Entrypoint") {
			t.Fatalf("New = %v", err)
		}
	})
}
