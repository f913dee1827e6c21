package rediskit

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

// Check returns a readiness check of a go-redis client (single node, cluster,
// sentinel or ring) that sends PING. go-redis reconnects on its own, so the same
// client recovers when the server returns. Check(nil) returns nil, which
// health.NewReadiness and health.NewMonitor refuse.
func Check(c redis.UniversalClient) health.Check {
	if c == nil {
		return nil
	}
	return health.CheckFunc(func(ctx context.Context) error { return c.Ping(ctx).Err() })
}

// ParseURL parses url, a Redis URL read from the variable named field (normally
// REDIS_URL), into client options. A missing or malformed url is a
// *fault.ConfigError naming field and what is wrong (a bad percent-escape, a port
// out of range, an unknown scheme…) in fixed words: url is never quoted, whole or
// in part, as it may carry a password, nor is go-redis's own error, which quotes it.
//
// The options have ContextTimeoutEnabled set, so that each call's ctx deadline
// bounds its I/O.
func ParseURL(field, url string) (*redis.Options, error) {
	if url == "" {
		return nil, fault.Invalid(field, "must not be empty")
	}
	if reason := fault.URLProblem(url); reason != "" {
		return nil, fault.Invalid(field, "not a Redis URL: %s", reason)
	}
	scheme, _, _ := strings.Cut(url, ":")
	switch strings.ToLower(scheme) {
	case "redis", "rediss", "unix":
	default:
		return nil, fault.Invalid(field, "the scheme must be redis, rediss (TLS) or unix")
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fault.Invalid(field, "not a valid Redis URL (want redis://[user:password@]host:port/db, rediss:// or unix:///path)")
	}
	// Let each call's ctx deadline bound its network I/O: a renewal cut off at the
	// term's soft deadline must not wait out the client's own read timeout.
	opts.ContextTimeoutEnabled = true
	return opts, nil
}
