package pgkit

import (
	"context"
	"errors"
	"regexp"
	"strconv"
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
		pc, err := ParseConfig("URL", cfg.URL)
		if err != nil {
			l.Merge("", err)
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

// ParseConfig parses url, a postgres:// URL or a key=value DSN read from the
// variable named field (normally DATABASE_URL). A malformed url is a
// *fault.ConfigError naming field and what is wrong (a port, an unterminated quote,
// an sslmode…) in fixed words: url is never quoted, whole or in part, as it may
// carry a password (in the user info, a password= pair or a ?password= parameter),
// nor is pgx's error, which quotes it after scrubbing what it recognises (and
// misses a password written without its key: `missing "=" after "s3cret"`).
func ParseConfig(field, url string) (*pgx.ConnConfig, error) {
	if url == "" {
		return nil, fault.Invalid(field, "must not be empty")
	}
	pc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fault.Invalid(field, "not a PostgreSQL URL or key=value DSN: %s", parseReason(err))
	}
	return pc, nil
}

// parseReason maps an error of pgx.ParseConfig to a fixed description. It reads the
// error to classify it and returns only text of its own.
func parseReason(err error) string {
	msg := err.Error()
	for _, c := range []struct{ in, reason string }{
		{"invalid port", "port must be a number from 1 to 65535"},
		{"unterminated quoted string", "a quoted value is not terminated"},
		{"invalid keyword/value", "an entry is not key=value (want host=… port=… user=… dbname=…)"},
		{"missing \"=\"", "an entry is not key=value (want host=… port=… user=… dbname=…)"},
		{"failed to parse as keyword/value", "an entry is not key=value (want host=… port=… user=… dbname=…)"},
		{"percent-encoded", "malformed percent-escape: % must be followed by two hex digits"},
		{"sslmode is invalid", "sslmode must be disable, allow, prefer, require, verify-ca or verify-full"},
		{"unable to read", "a TLS file (sslrootcert, sslcert, sslkey) cannot be read"},
		{"failed to configure TLS", "the TLS settings are invalid"},
		{"failed to parse as URL", "not a valid postgres:// URL"},
	} {
		if strings.Contains(msg, c.in) {
			return c.reason
		}
	}
	if _, ok := errors.AsType[*strconv.NumError](err); ok {
		return "a numeric setting (connect_timeout, …) is not a number"
	}
	return "see the PostgreSQL connection string documentation"
}
