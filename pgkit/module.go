package pgkit

import (
	"errors"

	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/lock"
)

// ModuleConfig configures Module.
type ModuleConfig struct {
	// URL locates PostgreSQL, normally the DATABASE_URL environment variable.
	URL string
	// Table names the fence table. Default DefaultTable.
	Table string
}

// Module wires the PostgreSQL lock into a Host's fx container: it provides *Lock,
// and the same lock as lock.Lock, and closes it with the container's OnStop (after
// the entrypoints have stopped, so their leases were released first). A missing
// or malformed URL is a *fault.ConfigError naming DATABASE_URL, reported when the
// container is built, without echoing the URL. Nothing is sent to the server until
// the lock is used.
func Module(cfg ModuleConfig) fx.Option {
	if cfg.URL == "" {
		return fx.Error(fault.Invalid("DATABASE_URL", "must not be empty"))
	}
	lk, err := NewLock(LockConfig{URL: cfg.URL, Table: cfg.Table})
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
	return fx.Module("pgkit",
		fx.Provide(
			func(lc fx.Lifecycle) *Lock {
				lc.Append(fx.StopHook(lk.Close))
				return lk
			},
			func(l *Lock) lock.Lock { return l },
		),
	)
}

func problems(err error) []fault.Problem {
	if ce, ok := errors.AsType[*fault.ConfigError](err); ok {
		return ce.Problems
	}
	return []fault.Problem{{Field: "URL", Reason: err.Error()}}
}
