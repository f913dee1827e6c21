// Package redisfx wires Redis into a Host's fx container (hostfx.Container): the
// client, the lock and a readiness check. It is apart from rediskit so that a plain
// lock user links neither fx nor the Host.
package redisfx

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/rediskit"
)

// ModuleConfig configures Module.
type ModuleConfig struct {
	// URL locates Redis, normally the REDIS_URL environment variable:
	// redis://[user:password@]host:port/db, rediss:// for TLS, or unix:///path.
	URL string
	// Lock configures the lock the module provides.
	Lock rediskit.LockConfig
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
//   - *rediskit.Lock, and the same lock as lock.Lock;
//   - a readiness check named cfg.CheckName ("redis"): PING through the client.
//
// A missing or malformed URL, or a bad cfg.Lock, is a *fault.ConfigError naming
// the field (REDIS_URL for the URL), reported when the container is built; the URL
// itself is never echoed, as it may carry a password. Nothing is sent to Redis until
// the client is used.
func Module(cfg ModuleConfig) fx.Option {
	opts, err := rediskit.ParseURL(cfg.URL)
	if err != nil {
		return fx.Error(err)
	}
	// Check cfg.Lock now, whether or not anything asks for the lock; a client that
	// has not been used has no connection to close.
	probe := redis.NewClient(opts)
	_, err = rediskit.NewLock(probe, cfg.Lock)
	_ = probe.Close()
	if err != nil {
		return fx.Error(err)
	}
	name := cfg.CheckName
	if name == "" {
		name = "redis"
	}
	return fx.Module("redisfx",
		fx.Provide(
			func(lc fx.Lifecycle) *redis.Client {
				c := redis.NewClient(opts)
				lc.Append(fx.Hook{OnStop: func(context.Context) error { return c.Close() }})
				return c
			},
			func(c *redis.Client) redis.UniversalClient { return c },
			func(c redis.UniversalClient) (*rediskit.Lock, error) { return rediskit.NewLock(c, cfg.Lock) },
			func(l *rediskit.Lock) lock.Lock { return l },
		),
		hostfx.Check(name, func(c redis.UniversalClient) health.Check { return rediskit.Check(c) }),
	)
}
