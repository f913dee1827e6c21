package pgkit_test

import (
	"context"
	"os"

	"github.com/servicewright/servicewright/pgkit"

	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/leader"
)

// lead is the leader's work: it runs for one term, until ctx ends.
func lead(ctx context.Context, term *leader.Term) error {
	<-ctx.Done()
	return nil
}

// One replica of the fleet at a time runs lead, on a session advisory lock in
// PostgreSQL: a crashed leader's lease is freed when its connection closes.
func ExampleNewLock() {
	lk, err := pgkit.NewLock(pgkit.LockConfig{URL: os.Getenv("DATABASE_URL")})
	if err != nil {
		panic(err) // a *fault.ConfigError naming each bad field
	}
	l, err := leader.New(leader.Config{Lock: lk, Key: "digest", Owner: os.Getenv("HOSTNAME")}, lead)
	if err != nil {
		panic(err)
	}
	host.Main(host.AppSpec{ServiceName: "digest", Entrypoints: []host.Registration{{Entrypoint: l}}})
}
