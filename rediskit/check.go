package rediskit

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/fault"
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

// ParseURL turns url, normally the REDIS_URL environment variable —
// redis://[user:password@]host:port/db, rediss:// for TLS, or unix:///path — into
// client options with ContextTimeoutEnabled, so that each call's ctx deadline bounds
// its I/O. A missing or malformed URL is a *fault.ConfigError naming REDIS_URL; the
// URL itself is never echoed, as it may carry a password.
func ParseURL(url string) (*redis.Options, error) {
	var l fault.Problems
	if url == "" {
		l.Addf("REDIS_URL", "must not be empty")
		return nil, l.Err()
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		l.Addf("REDIS_URL", "not a valid Redis URL (want redis://[user:password@]host:port/db, rediss:// or unix://)")
		return nil, l.Err()
	}
	// Let each call's ctx deadline bound its network I/O: a renewal cut off at the
	// term's soft deadline must not wait out the client's own read timeout.
	opts.ContextTimeoutEnabled = true
	return opts, nil
}
