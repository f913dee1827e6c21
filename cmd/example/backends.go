package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host/hostfx"
)

// backends are the real services the example uses when their variables are set:
// REDIS_URL, DATABASE_URL, KAFKA_BROKERS. Unset, it runs on embedded stand-ins. No
// error about them echoes a password: what they say of a URL goes through fault.Redact.
type backends struct {
	redisURL    string
	databaseURL string
}

func readBackends(l *fault.Problems) backends {
	b := backends{redisURL: os.Getenv("REDIS_URL"), databaseURL: os.Getenv("DATABASE_URL")}
	if b.redisURL != "" {
		opts, err := redis.ParseURL(b.redisURL)
		switch {
		case err != nil:
			// The parse error quotes the URL: only its redacted form may be echoed.
			l.Addf("REDIS_URL", "not a Redis URL: %s", fault.Redact(err.Error()))
		case opts.Network == "tcp" && !validPort(opts.Addr):
			l.Addf("REDIS_URL", "port must be a number from 1 to 65535")
		}
	}
	if b.databaseURL != "" {
		if _, err := pgxpool.ParseConfig(b.databaseURL); err != nil {
			l.Addf("DATABASE_URL", "not a PostgreSQL URL or DSN")
		}
	}
	return b
}

// validPort reports whether addr is host:port with a port from 1 to 65535, which
// redis.ParseURL does not check.
func validPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// module provides a PostgreSQL pool when DATABASE_URL is set, closes it with the
// container, and registers a readiness check named "postgres".
func (b backends) module() fx.Option {
	var opts []fx.Option
	// The Redis client comes with the leader module (digest.go).
	if b.databaseURL != "" {
		opts = append(opts,
			fx.Provide(func(lc fx.Lifecycle) (*pgxpool.Pool, error) {
				p, err := pgxpool.New(context.Background(), b.databaseURL)
				if err != nil {
					return nil, fmt.Errorf("DATABASE_URL: %s", fault.Redact(err.Error()))
				}
				lc.Append(fx.StopHook(p.Close))
				return p, nil
			}),
			hostfx.Check("postgres", func(p *pgxpool.Pool) health.Check { return health.Postgres(p) }),
		)
	}
	return fx.Options(opts...)
}
