package hostfx_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/host/hosttest"
)

type pool struct{}

func newLoop(*pool) (*entrypoint.Loop, error) {
	return entrypoint.NewLoop(entrypoint.LoopConfig{Name: "loop", Every: time.Hour}, func(ctx context.Context) error { return nil })
}

// build runs host.New on a container of opts, logging to an observer, and returns
// New's error with the lines logged at error level or above.
func build(t *testing.T, opts ...fx.Option) ([]observer.LoggedEntry, error) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	_, err := host.New(host.AppSpec{
		ServiceName: "x",
		Probes:      healthDisabled(),
		Telemetry:   host.TelemetryConfig{Logger: zap.New(core)},
		Container:   hostfx.Container(opts...),
	}, host.WithEnv(func(string) (string, bool) { return "", false }))
	return logs.FilterLevelExact(zapcore.ErrorLevel).AllUntimed(), err
}

func TestContainerErrors(t *testing.T) {
	t.Run("a missing type is a ConfigError naming the container and the user's constructor, without reflection frames, logged once", func(t *testing.T) {
		lines, err := build(t, hostfx.Provide(host.Registration{Order: 1}, newLoop))
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok || ce.Problems[0].Field != "Container" || host.ExitCode(err) != host.ExitConfig {
			t.Fatalf("New = %v (exit %d), want a ConfigError on Container, exit 78", err, host.ExitCode(err))
		}
		msg := err.Error()
		t.Logf("message: %s", msg)
		if strings.Contains(msg, "makeFuncStub") || strings.Contains(msg, "reflect") || !strings.Contains(msg, "newLoop") ||
			!strings.Contains(msg, "hostfx_test.pool") {
			t.Errorf("message %q: want the user's constructor and the missing type, no reflection frame", msg)
		}
		if len(lines) != 1 {
			t.Errorf("%d error lines, want the Host's one: %v", len(lines), lines)
		}
	})

	t.Run("a constructor failing for a runtime reason is a startup failure, exit 1, logged once", func(t *testing.T) {
		refused := errors.New("dial tcp 127.0.0.1:5432: connection refused")
		lines, err := build(t,
			fx.Provide(func() (*pool, error) { return nil, refused }),
			hostfx.Provide(host.Registration{Order: 1}, newLoop))
		if _, ok := errors.AsType[*fault.ConfigError](err); ok || !errors.Is(err, refused) || host.ExitCode(err) != host.ExitFailure {
			t.Fatalf("New = %v (exit %d), want the constructor's error, exit 1", err, host.ExitCode(err))
		}
		if strings.Contains(err.Error(), "makeFuncStub") {
			t.Errorf("message %q names a reflection frame", err)
		}
		if len(lines) != 1 {
			t.Errorf("%d error lines, want the Host's one: %v", len(lines), lines)
		}
	})

	t.Run("a constructor's own ConfigError keeps its fields, exit 78", func(t *testing.T) {
		_, err := build(t, fx.Provide(func() (*pool, error) { return nil, fault.Invalid("DATABASE_URL", "must not be empty") }),
			fx.Invoke(func(*pool) {}))
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok || ce.Problems[0].Field != "Container.DATABASE_URL" || host.ExitCode(err) != host.ExitConfig {
			t.Fatalf("New = %v, want a ConfigError on Container.DATABASE_URL", err)
		}
	})

	t.Run("a Registration that already holds an entrypoint is a ConfigError naming the field", func(t *testing.T) {
		l, err := newLoop(nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = build(t, fx.Provide(func() *pool { return &pool{} }), hostfx.Provide(host.Registration{Entrypoint: l}, newLoop))
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok || host.ExitCode(err) != host.ExitConfig || !strings.Contains(ce.Error(), "Registration.Entrypoint") {
			t.Fatalf("New = %v, want a ConfigError on Registration.Entrypoint", err)
		}
	})

	t.Run("a cycle is a ConfigError", func(t *testing.T) {
		type a struct{}
		type b struct{}
		_, err := build(t,
			fx.Provide(func(*b) *a { return nil }, func(*a) *b { return nil }),
			fx.Invoke(func(*a) {}))
		if host.ExitCode(err) != host.ExitConfig || !strings.Contains(err.Error(), "cycle") {
			t.Fatalf("New = %v, want a ConfigError naming the cycle", err)
		}
	})

	t.Run("an invoke failing for a runtime reason is a startup failure", func(t *testing.T) {
		refused := errors.New("connection refused")
		_, err := build(t, fx.Invoke(func() error { return refused }))
		if !errors.Is(err, refused) || host.ExitCode(err) != host.ExitFailure {
			t.Fatalf("New = %v (exit %d), want exit 1", err, host.ExitCode(err))
		}
	})
}

func TestDrainHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran []string
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "x",
			Container: hostfx.Container(
				fx.Supply(&pool{}),
				hostfx.Provide(host.Registration{Order: 1}, newLoop),
				hostfx.DrainHook(hooks.DrainHook{Name: "deregister", MaxDuration: time.Second},
					func(*pool) func(context.Context, time.Duration) error {
						return func(_ context.Context, allowed time.Duration) error {
							ran = append(ran, "deregister")
							if allowed <= 0 || allowed > time.Second {
								t.Errorf("allowed %s, want at most the phase's MaxDuration", allowed)
							}
							return nil
						}
					}),
			),
		})
		x.WaitStage(host.StageServe)
		x.Stop()
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
		if len(ran) != 1 {
			t.Fatalf("the drain hook ran %d times, want once", len(ran))
		}
	})
}

func healthDisabled() health.ListenerConfig { return health.ListenerConfig{Disabled: true} }
