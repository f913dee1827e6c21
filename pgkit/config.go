package pgkit

import (
	"context"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/servicewright/servicewright/fault"
)

// LockConfig configures a Lock. Exactly one of URL and Connect is required.
type LockConfig struct {
	// URL locates the server, normally the DATABASE_URL environment variable: a
	// postgres:// URL or a key=value DSN. The lock opens its own connections from
	// it; it is never echoed in an error, as it may carry a password.
	URL string
	// Connect, when set instead of URL, opens each of the lock's connections (to
	// share TLS settings or a password function with the rest of the service). It
	// must return a new connection each call, not one shared with other code.
	Connect func(ctx context.Context) (*pgx.Conn, error)
	// Table names the fence table, optionally schema-qualified ("locks.fence").
	// The lock creates it when first used. Default DefaultTable.
	Table string
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// build validates cfg and returns how to open a connection and the quoted table.
func (cfg LockConfig) build() (func(context.Context) (*pgx.Conn, error), string, error) {
	var l fault.Problems
	connect := cfg.Connect
	switch {
	case cfg.URL == "" && cfg.Connect == nil:
		l.Addf("URL", "must be set, or Connect: the lock needs a way to open its dedicated connections")
	case cfg.URL != "" && cfg.Connect != nil:
		l.Addf("Connect", "must not be set with URL; give one way to open the lock's connections")
	case cfg.URL != "":
		pc, err := pgx.ParseConfig(cfg.URL)
		if err != nil {
			l.Addf("URL", "not a PostgreSQL URL or DSN")
			break
		}
		pc.RuntimeParams["application_name"] = "servicewright-lock"
		connect = func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, pc.Copy()) }
	}
	table := cfg.Table
	if table == "" {
		table = DefaultTable
	}
	if !identifier.MatchString(table) {
		l.Addf("Table", "must be an identifier, optionally schema-qualified, got %q", cfg.Table)
	}
	if err := l.Err(); err != nil {
		return nil, "", err
	}
	return connect, pgx.Identifier(strings.Split(table, ".")).Sanitize(), nil
}
