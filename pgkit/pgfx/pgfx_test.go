package pgfx

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/pgkit"
)

func TestModule(t *testing.T) {
	t.Run("a missing or malformed URL names DATABASE_URL without echoing it", func(t *testing.T) {
		for _, url := range []string{"", "postgres://u:s3cret@host:notaport/db"} {
			err := fx.New(Module(ModuleConfig{URL: url}), fx.NopLogger).Err()
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || ce.Problems[0].Field != "DATABASE_URL" || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("err = %v, want a ConfigError naming DATABASE_URL, without the password", err)
			}
		}
	})
	t.Run("provides the lock and closes it on stop, which frees its leases", func(t *testing.T) {
		pg := env.Postgres(t)
		var lk lock.Lock
		app := fxtest.New(t, Module(ModuleConfig{URL: pg.DSN()}), fx.Populate(&lk))
		app.RequireStart()
		ctx := context.Background()
		k := "pgfx-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		if _, err := lk.Acquire(ctx, k, "a", time.Minute); err != nil {
			t.Fatal(err)
		}
		app.RequireStop()
		other, err := pgkit.NewLock(pgkit.LockConfig{URL: pg.DSN()})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close(ctx)
		waitFree(t, other, k, 5*time.Second)
	})
	t.Run("provides a pool and a postgres check through it, and closes the pool on stop", func(t *testing.T) {
		pg := env.Postgres(t)
		var (
			pool   *pgxpool.Pool
			checks []hostfx.NamedCheck
		)
		app := fxtest.New(t, Module(ModuleConfig{URL: pg.DSN()}), fx.Populate(&pool),
			fx.Invoke(fx.Annotate(func(cs []hostfx.NamedCheck) { checks = cs }, fx.ParamTags(`group:"checks"`))))
		app.RequireStart()
		ctx := context.Background()
		var one int
		if err := pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("query through the pool: %d, %v", one, err)
		}
		if len(checks) != 1 || checks[0].Name != "postgres" {
			t.Fatalf("checks %+v, want one named postgres", checks)
		}
		if err := checks[0].Check.Health(ctx); err != nil {
			t.Fatalf("Health = %v", err)
		}
		app.RequireStop()
		if err := pool.Ping(ctx); err == nil {
			t.Fatal("the pool still answers after the container stopped")
		}
	})
	t.Run("a named check, and a malformed pool setting named DATABASE_URL", func(t *testing.T) {
		pg := env.Postgres(t)
		var checks []hostfx.NamedCheck
		app := fxtest.New(t, Module(ModuleConfig{URL: pg.DSN(), CheckName: "orders-db"}),
			fx.Invoke(fx.Annotate(func(cs []hostfx.NamedCheck) { checks = cs }, fx.ParamTags(`group:"checks"`))))
		app.RequireStart()
		app.RequireStop()
		if len(checks) != 1 || checks[0].Name != "orders-db" {
			t.Fatalf("checks %+v, want one named orders-db", checks)
		}
		err := fx.New(Module(ModuleConfig{URL: "postgres://u:s3cret@localhost/db?pool_max_conns=many"}), fx.NopLogger).Err()
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok || ce.Problems[0].Field != "DATABASE_URL" || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("err = %v, want a ConfigError naming DATABASE_URL, without the password", err)
		}
	})
}

// waitFree polls Inspect until key is free; leases on PostgreSQL lapse on the
// server's timer, outside the test's control.
func waitFree(t *testing.T, lk lock.Lock, key string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		h, err := lk.Inspect(context.Background(), key)
		if err == nil && !h.Held() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q still held after %v: %+v, %v", key, within, h, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
