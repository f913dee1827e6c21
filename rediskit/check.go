package rediskit

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/health"
)

// Check returns a readiness check of a go-redis client (single node, cluster,
// sentinel or ring) that sends PING. go-redis reconnects on its own, so the same
// client recovers when the server returns. Check(nil) returns nil, which
// health.NewReadiness and health.NewListener refuse.
func Check(c redis.UniversalClient) health.Check {
	if c == nil {
		return nil
	}
	return health.CheckFunc(func(ctx context.Context) error { return c.Ping(ctx).Err() })
}
