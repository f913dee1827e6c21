package hostfx_test

import (
	"context"
	"time"

	"go.uber.org/fx"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

type store struct{}

func newStore() *store                         { return &store{} }
func (*store) Ping(context.Context) error      { return nil }
func (*store) Compact(context.Context) error   { return nil }
func (*store) Flush(ctx context.Context) error { return nil }

// An fx container gives the Host its entrypoints (Provide, with their bind order),
// warmups, hooks and checks from constructors; the Host builds it first, then runs
// the sequence. fx's own OnStart and OnStop hooks run at the container's open and
// close, after every entrypoint stopped.
func ExampleContainer() {
	host.Main(host.AppSpec{ServiceName: "compactor", Container: hostfx.Container(
		fx.Provide(newStore),
		hostfx.Warmup(func(s *store) host.Step { return host.Step{Name: "ping-store", Start: s.Ping} }),
		hostfx.Provide(host.Registration{Order: 20}, func(s *store) (*entrypoint.Loop, error) {
			return entrypoint.NewLoop(entrypoint.LoopConfig{Name: "compact", Every: time.Minute}, s.Compact)
		}),
		hostfx.Hook(hooks.PreShutdown, "flush", func(s *store) hooks.Func { return s.Flush }),
		hostfx.Check("store", func(s *store) health.Check { return health.CheckFunc(s.Ping) }),
	)})
}
