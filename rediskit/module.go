package rediskit

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/lock"
)

// ModuleConfig configures Module.
type ModuleConfig struct {
	// URL locates Redis, normally the REDIS_URL environment variable:
	// redis://[user:password@]host:port/db, rediss:// for TLS, or unix:///path.
	URL string
	// Lock configures the lock the module provides.
	Lock LockConfig
	// CheckName names the readiness check the module registers with the Host.
	// Default "redis".
	CheckName string
}

// Module wires Redis into a Host's fx container. It provides:
//
//   - *redis.Client, made from cfg.URL (with ContextTimeoutEnabled, so that each
//     call's ctx deadline bounds its I/O), and the same client as
//     redis.UniversalClient; it is closed by the container's OnStop, after the
//     entrypoints have stopped;
//   - *Lock, and the same lock as lock.Lock;
//   - a readiness check named cfg.CheckName ("redis"): PING through the client.
//
// A missing or malformed URL, or a bad cfg.Lock, is a *fault.ConfigError naming
// the field (REDIS_URL for the URL), reported when the container is built; the URL
// itself is never echoed, as it may carry a password. Nothing is sent to Redis until
// the client is used.
func Module(cfg ModuleConfig) fx.Option {
	opts, err := ParseURL("REDIS_URL", cfg.URL)
	if err != nil {
		return fx.Error(err)
	}
	var l fault.Problems
	cfg.Lock.check(&l)
	if err := l.Err(); err != nil {
		return fx.Error(err)
	}
	name := cfg.CheckName
	if name == "" {
		name = "redis"
	}
	return fx.Module("rediskit",
		fx.Provide(
			func(lc fx.Lifecycle) *redis.Client {
				c := redis.NewClient(opts)
				lc.Append(fx.Hook{OnStop: func(context.Context) error { return c.Close() }})
				return c
			},
			func(c *redis.Client) redis.UniversalClient { return c },
			func(c redis.UniversalClient) (*Lock, error) { return NewLock(c, cfg.Lock) },
			func(l *Lock) lock.Lock { return l },
		),
		host.Check(name, func(c redis.UniversalClient) health.Check { return Check(c) }),
	)
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
