package leader

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fault"
)

// ModuleConfig configures Module.
type ModuleConfig struct {
	// URL locates Redis, normally the REDIS_URL environment variable:
	// redis://[user:password@]host:port/db, rediss:// for TLS, or unix:///path.
	URL string
	// KeyPrefix replaces DefaultKeyPrefix in every key the lock writes.
	KeyPrefix string
}

// Module wires Redis leadership into an fx container. It provides:
//
//   - *redis.Client, made from cfg.URL (with ContextTimeoutEnabled, so that each
//     call's ctx deadline bounds its I/O), and the same client as
//     redis.UniversalClient; it is closed by the container's OnStop, after the
//     entrypoints have stopped;
//   - *RedisLock, and the same lock as Lock.
//
// A missing or malformed URL is a *fault.ConfigError (fault.ConfigError) naming REDIS_URL,
// reported when the container is built; the URL itself is never echoed, as it may
// carry a password. Nothing is sent to Redis until the lock is used.
//
// The readiness check lives in the health package, which leader does not import; add
// it beside the module with
//
//	host.Check("redis", health.Redis) // health.Redis takes the redis.UniversalClient
func Module(cfg ModuleConfig) fx.Option {
	opts, err := parseURL(cfg.URL)
	if err != nil {
		return fx.Error(err)
	}
	var lockOpts []RedisOption
	if cfg.KeyPrefix != "" {
		lockOpts = append(lockOpts, WithKeyPrefix(cfg.KeyPrefix))
	}
	return fx.Module("leader",
		fx.Provide(
			func(lc fx.Lifecycle) *redis.Client {
				c := redis.NewClient(opts)
				lc.Append(fx.Hook{OnStop: func(context.Context) error { return c.Close() }})
				return c
			},
			func(c *redis.Client) redis.UniversalClient { return c },
			func(c redis.UniversalClient) *RedisLock { return NewRedisLock(c, lockOpts...) },
			func(l *RedisLock) Lock { return l },
		),
	)
}

func parseURL(url string) (*redis.Options, error) {
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
