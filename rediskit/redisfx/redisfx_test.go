package redisfx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/rediskit"
)

func TestModule(t *testing.T) {
	t.Run("provides the client and the lock, and closes the client on stop", func(t *testing.T) {
		r := env.Redis(t)
		var (
			lk     lock.Lock
			client redis.UniversalClient
		)
		app := fxtest.New(t, Module(ModuleConfig{URL: r.URL(), Lock: rediskit.LockConfig{KeyPrefix: "test:"}}), fx.Populate(&lk, &client))
		app.RequireStart()
		ctx := context.Background()
		l, err := lk.Acquire(ctx, "module", "a", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if v := client.Get(ctx, "test:{module}").Val(); v != "a:1" {
			t.Fatalf("lease value %q under the configured prefix", v)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		app.RequireStop()
		if err := client.Ping(ctx).Err(); !errors.Is(err, redis.ErrClosed) {
			t.Fatalf("Ping after stop = %v, want ErrClosed", err)
		}
	})

	t.Run("registers a readiness check named redis that pings through the client", func(t *testing.T) {
		r := env.Redis(t)
		var checks []hostfx.NamedCheck
		app := fxtest.New(t, Module(ModuleConfig{URL: r.URL()}),
			fx.Invoke(fx.Annotate(func(cs []hostfx.NamedCheck) { checks = cs }, fx.ParamTags(`group:"checks"`))))
		app.RequireStart()
		defer app.RequireStop()
		if len(checks) != 1 || checks[0].Name != "redis" {
			t.Fatalf("checks %+v, want one named redis", checks)
		}
		if err := checks[0].Check.Health(context.Background()); err != nil {
			t.Fatalf("Health = %v", err)
		}
	})

	for _, c := range []struct{ name, url string }{
		{"an empty URL", ""},
		{"a malformed URL", "http://user:s3cret@host:6379/0"},
	} {
		t.Run(c.name+" is a configuration error naming REDIS_URL", func(t *testing.T) {
			err := fx.New(Module(ModuleConfig{URL: c.url}), fx.NopLogger).Err()
			var ce *fault.ConfigError
			if !errors.As(err, &ce) || ce.Problems[0].Field != "REDIS_URL" {
				t.Fatalf("err = %v, want a ConfigError naming REDIS_URL", err)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error echoes the password: %v", err)
			}
		})
	}
}
