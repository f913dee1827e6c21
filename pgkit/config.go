package pgkit

import (
	"context"
	"regexp"
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
	// The lock creates it when first used. Default DefaultTable.
	Table string

	// DeadClient says how fast the server gives up on a lock connection that went
	// silent (its host gone, a partition): the keepalives and TCP_USER_TIMEOUT the
	// lock sets on each of its sessions. A lease is freed at the earliest when the
	// server detects that, so it bounds how long a holder may act (see
	// Lock.EarliestRelease). Zero fields take DefaultDeadClient's.
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

// DefaultDeadClient detects a silent client after 10s + 3 × 1s = 13s of silence, or
// 13s of unacknowledged data: within the leader's default TTL (15s), with room for
// the default RenewEvery, YieldGrace, ReleaseTimeout and Margin (5+2+1+1 = 9s).
var DefaultDeadClient = DeadClient{KeepaliveIdle: 10 * time.Second, KeepaliveInterval: time.Second, KeepaliveCount: 3, UserTimeout: 13 * time.Second}

// within is the longest silence the server tolerates before it ends a session:
// the earlier of the keepalives' end and the user timeout.
func (d DeadClient) within() time.Duration {
	return min(d.KeepaliveIdle+time.Duration(d.KeepaliveCount)*d.KeepaliveInterval, d.UserTimeout)
}

func (d DeadClient) withDefaults() DeadClient {
	if d.KeepaliveIdle == 0 {
		d.KeepaliveIdle = DefaultDeadClient.KeepaliveIdle
	}
	if d.KeepaliveInterval == 0 {
		d.KeepaliveInterval = DefaultDeadClient.KeepaliveInterval
	}
	if d.KeepaliveCount == 0 {
		d.KeepaliveCount = DefaultDeadClient.KeepaliveCount
	}
	if d.UserTimeout == 0 {
		d.UserTimeout = DefaultDeadClient.UserTimeout
	}
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
	cfg.DeadClient.check(&l)
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
