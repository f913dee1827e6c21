package rediskit_test

import (
	"context"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/rediskit"

	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/leader"
)

// lead is the leader's work: it runs for one term, until ctx ends.
func lead(ctx context.Context, term *leader.Term) error {
	<-ctx.Done()
	return nil
}

// One replica of the fleet at a time runs lead, on a lease kept in Redis. Nothing
// is sent to Redis until the Host serves the Leadership.
func ExampleNewLock() {
	opts, err := rediskit.ParseURL("REDIS_URL", os.Getenv("REDIS_URL"))
	if err != nil {
		panic(err) // a *fault.ConfigError naming REDIS_URL, never echoing the URL
	}
	client := redis.NewClient(opts)
	defer client.Close()
	lk, err := rediskit.NewLock(client, rediskit.LockConfig{})
	if err != nil {
		panic(err)
	}
	l, err := leader.New(leader.Config{Lock: lk, Key: "digest", Owner: os.Getenv("HOSTNAME")}, lead)
	if err != nil {
		panic(err)
	}
	host.Main(host.AppSpec{ServiceName: "digest", Entrypoints: []host.Registration{{Entrypoint: l}}})
}
