package pgkit

import (
	"cmp"
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"

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
	// The lock creates it when first used. Default "servicewright_lock".
	Table string

	// DeadClient says how fast the server gives up on a lock connection that went
	// silent (its host gone, a partition): the keepalives and TCP_USER_TIMEOUT the
	// lock sets on each of its sessions. A lease is freed at the earliest when the
	// server detects that, so it bounds how long a holder may act (see
	// Lock.EarliestRelease). Zero fields take the defaults: 10s idle, then 3 probes 1s apart, and a 13s TCP_USER_TIMEOUT.
	DeadClient DeadClient
}

// DeadClient is the server-side detection of a silent client, set per session
// (tcp_keepalives_idle, tcp_keepalives_interval, tcp_keepalives_count,
// tcp_user_timeout). Keepalive times are whole seconds, as PostgreSQL takes them.
type DeadClient struct {
	// KeepaliveIdle is the silence after which the server sends its first probe.
	KeepaliveIdle time.Duration
	// KeepaliveInterval is the time between unanswered probes.
	KeepaliveInterval time.Duration
	// KeepaliveCount is how many unanswered probes end the session.
	KeepaliveCount int
	// UserTimeout ends the session when data the server sent stays unacknowledged
	// this long (a partition while a reply is in flight, when keepalives do not
	// run). Whole milliseconds.
	UserTimeout time.Duration
}

// defaultDeadClient detects a silent client after 10s + 3 × 1s = 13s of silence, or
// 13s of unacknowledged data: within the leader's default TTL (15s), with room for
// the default RenewEvery, YieldGrace, ReleaseTimeout and Margin (5+2+1+1 = 9s).
func defaultDeadClient() DeadClient {
	return DeadClient{KeepaliveIdle: 10 * time.Second, KeepaliveInterval: time.Second, KeepaliveCount: 3, UserTimeout: 13 * time.Second}
}

// within is the longest silence the server tolerates before it ends a session:
// the earlier of the keepalives' end and the user timeout.
func (d DeadClient) within() time.Duration {
	return min(d.KeepaliveIdle+time.Duration(d.KeepaliveCount)*d.KeepaliveInterval, d.UserTimeout)
}

func (d DeadClient) withDefaults() DeadClient {
	d.KeepaliveIdle = cmp.Or(d.KeepaliveIdle, defaultDeadClient().KeepaliveIdle)
	d.KeepaliveInterval = cmp.Or(d.KeepaliveInterval, defaultDeadClient().KeepaliveInterval)
	d.KeepaliveCount = cmp.Or(d.KeepaliveCount, defaultDeadClient().KeepaliveCount)
	d.UserTimeout = cmp.Or(d.UserTimeout, defaultDeadClient().UserTimeout)
	return d
}

func (d DeadClient) check(l *fault.Problems) {
	for _, f := range []struct {
		name string
		v    time.Duration
		unit time.Duration
	}{
		{"DeadClient.KeepaliveIdle", d.KeepaliveIdle, time.Second},
		{"DeadClient.KeepaliveInterval", d.KeepaliveInterval, time.Second},
		{"DeadClient.UserTimeout", d.UserTimeout, time.Millisecond},
	} {
		switch {
		case f.v < 0:
			l.Addf(f.name, "must not be negative, got %v", f.v)
		case f.v%f.unit != 0:
			l.Addf(f.name, "must be a whole number of %v (PostgreSQL's unit), got %v", f.unit, f.v)
		}
	}
	if d.KeepaliveCount < 0 {
		l.Addf("DeadClient.KeepaliveCount", "must not be negative, got %d", d.KeepaliveCount)
	}
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// connector returns how the lock opens a connection, from URL or Connect, and
// records in l what is wrong with them (under URL or Connect).
func (cfg LockConfig) connector(l *fault.Problems) func(context.Context) (*pgx.Conn, error) {
	switch {
	case cfg.URL == "" && cfg.Connect == nil:
		l.Addf("URL", "must be set, or Connect: the lock needs a way to open its dedicated connections")
	case cfg.URL != "" && cfg.Connect != nil:
		l.Addf("Connect", "must not be set with URL; give one way to open the lock's connections")
	case cfg.URL != "":
		pc, err := ParseConfig("URL", cfg.URL)
		if err != nil {
			l.Merge("", err)
			return nil
		}
		pc.RuntimeParams["application_name"] = "servicewright-lock"
		return func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, pc.Copy()) }
	}
	return cfg.Connect
}

// resolve fills in the defaults (Table, DeadClient's zero fields) and records every
// problem with them in l under its field name. Where to connect is connector's.
func (cfg LockConfig) resolve(l *fault.Problems) LockConfig {
	cfg.DeadClient.check(l)
	cfg.DeadClient = cfg.DeadClient.withDefaults()
	table := cmp.Or(cfg.Table, defaultTable)
	if !identifier.MatchString(table) {
		l.Addf("Table", "must be an identifier, optionally schema-qualified, got %q", cfg.Table)
	}
	cfg.Table = table
	return cfg
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
