package pgkit

import (
	"github.com/servicewright/servicewright/fault"

	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

var errClosed = errors.New("pgkit: lock is closed")

// closeTimeout bounds the goodbye to the server when a connection is closed.
const closeTimeout = time.Second

// open opens one connection for the lock and sets its server-side dead-client
// detection (DeadClient).
func (l *Lock) open(ctx context.Context) (*pgx.Conn, error) {
	c, err := l.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	d := l.dead
	if _, err := c.Exec(ctx, keepaliveSQL, strconv.FormatInt(int64(d.KeepaliveIdle/time.Second), 10),
		strconv.FormatInt(int64(d.KeepaliveInterval/time.Second), 10), strconv.Itoa(d.KeepaliveCount),
		strconv.FormatInt(int64(d.UserTimeout/time.Millisecond), 10)); err != nil {
		closeConn(c)
		return nil, fmt.Errorf("connect: %w", err)
	}
	return c, nil
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = c.Close(ctx)
}

// takeIdle returns a session that holds no lease: a kept one, or a new one.
func (l *Lock) takeIdle(ctx context.Context) (*session, error) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, errClosed
		}
		n := len(l.idle)
		if n == 0 {
			l.mu.Unlock()
			break
		}
		s := l.idle[n-1]
		l.idle = l.idle[:n-1]
		l.mu.Unlock()
		if s.open() {
			return s, nil
		}
	}
	c, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	return &session{conn: c}, nil
}

// putIdle keeps s for a later acquire, or closes it when enough are kept.
func (l *Lock) putIdle(s *session) {
	open := s.open() // before l.mu: a session's lock is never taken under the Lock's
	l.mu.Lock()
	if !l.closed && len(l.idle) < maxIdle && open {
		l.idle = append(l.idle, s)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	s.close()
}

// open reports whether the session still has a live connection. It takes s.mu: a
// session released by one goroutine may be closed by another (an acquire that found
// it lapsed), and close clears conn under s.mu.
func (s *session) open() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil && !s.conn.IsClosed()
}

// close closes the session's connection, which frees whatever it holds.
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		closeConn(s.conn)
		s.conn = nil
	}
}

// withAdmin runs fn on the connection shared by Inspect, AdvanceFence and the
// table's creation, opening it when needed.
func (l *Lock) withAdmin(ctx context.Context, op, key string, fn func(*pgx.Conn) error) error {
	if err := l.ensure(ctx); err != nil {
		return fmt.Errorf("%s %q: %w", op, key, err)
	}
	l.admin.Lock()
	defer l.admin.Unlock()
	c, err := l.adminConn(ctx)
	if err == nil {
		err = fn(c)
	}
	if err != nil {
		if c != nil && c.IsClosed() {
			l.adminC = nil
		}
		return fmt.Errorf("%s %q: %w", op, key, err)
	}
	return nil
}

// adminConn returns the shared connection, opening it when needed. l.admin is held.
func (l *Lock) adminConn(ctx context.Context) (*pgx.Conn, error) {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if l.adminC != nil && !l.adminC.IsClosed() {
		return l.adminC, nil
	}
	c, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	l.adminC = c
	return c, nil
}

// minServerVersion is the first PostgreSQL with idle_session_timeout, which is
// what bounds a lease whose holder stopped renewing.
const minServerVersion = 140000

// ensure checks the server's version and creates the fence table, once per Lock. A
// server older than 14 is a *fault.ConfigError.
func (l *Lock) ensure(ctx context.Context) error {
	l.admin.Lock()
	defer l.admin.Unlock()
	if l.ensured {
		return nil
	}
	c, err := l.adminConn(ctx)
	if err != nil {
		return err
	}
	var version int
	if err := c.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		if c.IsClosed() {
			l.adminC = nil
		}
		return fmt.Errorf("read the server version: %w", err)
	}
	if version < minServerVersion {
		return fault.Invalid("URL", "the server runs PostgreSQL %d.%d; the lock needs 14 or later (idle_session_timeout bounds its leases)",
			version/10000, version%10000)
	}
	err = pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(`+strconv.FormatInt(ddlLockKey, 10)+`)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(tableDDL, l.table)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(expiresDDL, l.table))
		return err
	})
	if err != nil {
		if c.IsClosed() {
			l.adminC = nil
		}
		return fmt.Errorf("create the fence table %s: %w", l.table, err)
	}
	l.ensured = true
	return nil
}
