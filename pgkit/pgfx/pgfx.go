// Package pgfx wires PostgreSQL into a Host's fx container (hostfx.Container): a
// pool, the lock and a readiness check, as redisfx does for Redis. It is apart from
// pgkit so that a plain lock user links no fx.
package pgfx

import (
	"cmp"
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/pgkit"
)

// ModuleConfig configures Module.
type ModuleConfig struct {
	// URL locates PostgreSQL, normally the DATABASE_URL environment variable. Its
	// pool_* parameters (pool_max_conns, …) size the pool.
	URL string
	// Table names the fence table. Default "servicewright_lock".
	Table string
	// CheckName names the readiness check the module registers with the Host.
	// Default "postgres".
	CheckName string
	// NoLock leaves lock.Lock to another module (redisfx's, say): the module then
	// provides *pgkit.Lock only.
	NoLock bool
}

// Module wires PostgreSQL into a Host's fx container. It provides:
//
//   - *pgxpool.Pool, made from cfg.URL, closed by the container's OnStop (after the
//     entrypoints have stopped);
//   - *pgkit.Lock, and the same lock as lock.Lock (unless NoLock), closed by the
//     container's OnStop too, so the entrypoints' leases were released first;
//   - a readiness check named cfg.CheckName ("postgres"): a ping through the pool. It
//     degrades readiness, never withdraws it (the database is shared by every
//     replica).
//
// A missing or malformed URL is a *fault.ConfigError naming DATABASE_URL, reported
// when the container is built, without echoing the URL. Nothing is sent to the
// server until the pool or the lock is used (the pool opens pool_min_conns, 0 by
// default, at once).
func Module(cfg ModuleConfig) fx.Option {
	if cfg.URL == "" {
		return fx.Error(fault.Invalid("DATABASE_URL", "must not be empty"))
	}
	lk, err := pgkit.NewLock(pgkit.LockConfig{URL: cfg.URL, Table: cfg.Table})
	if err != nil {
		var l fault.Problems
		for _, p := range problems(err) {
			if p.Field == "URL" {
				p.Field = "DATABASE_URL"
			}
			l.Addf(p.Field, "%s", p.Reason)
		}
		return fx.Error(l.Err())
	}
	poolCfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		// pgkit.NewLock parsed the URL; what is left are the pool_* settings. The
		// error, which quotes the URL, is not echoed.
		return fx.Error(fault.Invalid("DATABASE_URL", "the pool settings (pool_max_conns, pool_min_conns, …) are malformed"))
	}
	var asLock fx.Option = fx.Provide(func(l *pgkit.Lock) lock.Lock { return l })
	if cfg.NoLock {
		asLock = fx.Options()
	}
	return fx.Module("pgfx",
		asLock,
		fx.Provide(
			func(lc fx.Lifecycle) (*pgxpool.Pool, error) {
				p, err := pgxpool.NewWithConfig(context.Background(), poolCfg)
				if err != nil {
					return nil, fault.Invalid("DATABASE_URL", "the pool cannot be made from it")
				}
				lc.Append(fx.StopHook(p.Close))
				return p, nil
			},
			func(lc fx.Lifecycle) *pgkit.Lock {
				lc.Append(fx.StopHook(lk.Close))
				return lk
			},
		),
		hostfx.Check(cmp.Or(cfg.CheckName, "postgres"), func(p *pgxpool.Pool) health.Check { return health.Postgres(p) }),
	)
}

func problems(err error) []fault.Problem {
	if ce, ok := errors.AsType[*fault.ConfigError](err); ok {
		return ce.Problems
	}
	return []fault.Problem{{Field: "URL", Reason: err.Error()}}
}
