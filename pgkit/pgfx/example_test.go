package pgfx_test

import (
	"context"
	"os"

	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/leader"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/pgkit/pgfx"
)

// lead is the leader's work: it runs for one term, until ctx ends.
func lead(ctx context.Context, term *leader.Term) error {
	<-ctx.Done()
	return nil
}

// The module gives the container a PostgreSQL pool, a lock.Lock on session advisory
// locks and a readiness check. A missing or bad DATABASE_URL is a configuration
// error (exit 78) that never echoes the URL.
func ExampleModule() {
	host.Main(host.AppSpec{ServiceName: "digest", Container: hostfx.Container(
		pgfx.Module(pgfx.ModuleConfig{URL: os.Getenv("DATABASE_URL")}),
		hostfx.Provide(host.Registration{Order: 30}, func(lk lock.Lock, inst hostfx.Instance) (*leader.Leadership, error) {
			return leader.New(leader.Config{Lock: lk, Key: "digest", Owner: string(inst)}, lead)
		}),
	)})
}
