// Package pgfx wires the PostgreSQL lock into a Host's fx container
// (hostfx.Container). It is apart from pgkit so that a plain lock user links no fx.
package pgfx

import (
	"errors"

	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/pgkit"
)

// ModuleConfig configures Module.
type ModuleConfig struct {
	// URL locates PostgreSQL, normally the DATABASE_URL environment variable.
	URL string
	// Table names the fence table. Default pgkit.DefaultTable.
	Table string
}

// Module wires the PostgreSQL lock into a Host's fx container: it provides
// *pgkit.Lock,
// and the same lock as lock.Lock, and closes it with the container's OnStop (after
// the entrypoints have stopped, so their leases were released first). A missing
// or malformed URL is a *fault.ConfigError naming DATABASE_URL, reported when the
// container is built, without echoing the URL. Nothing is sent to the server until
// the lock is used.
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
	return fx.Module("pgfx",
		fx.Provide(
			func(lc fx.Lifecycle) *pgkit.Lock {
				lc.Append(fx.StopHook(lk.Close))
				return lk
			},
			func(l *pgkit.Lock) lock.Lock { return l },
		),
	)
}

func problems(err error) []fault.Problem {
	if ce, ok := errors.AsType[*fault.ConfigError](err); ok {
		return ce.Problems
	}
	return []fault.Problem{{Field: "URL", Reason: err.Error()}}
}
