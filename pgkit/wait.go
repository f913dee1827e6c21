package pgkit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/servicewright/servicewright/lock"
)

// lockNotAvailable is the SQLSTATE of a lock_timeout that expired.
const lockNotAvailable = "55P03"

// AcquireWait implements lock.Waiter: on a session of its own, it queues on the
// key's advisory lock (pg_advisory_lock under a lock_timeout of wait), then writes
// the fence row and the lease's idle timeout, all sent in one round trip. The server
// grants the lock to a waiter the moment the holder's session ends — a release, a
// crash, a killed connection — so the waiter leads one round trip later.
//
// When wait passes with the lock still held it returns lock.ErrHeld and keeps the
// session for the next wait. When ctx is done first the session's connection is
// closed (pgx gives up on a query that way), which frees whatever it took; the
// error wraps ctx's. A non-positive wait is Acquire.
//
// Each waiting campaigner holds a server session for as long as it waits. It does
// not work through a pooler that does not keep sessions (PgBouncer in transaction
// or statement mode): the wait and the lock would land on different sessions.
func (l *Lock) AcquireWait(ctx context.Context, key, owner string, ttl, wait time.Duration) (lock.Lease, error) {
	if wait <= 0 {
		return l.Acquire(ctx, key, owner, ttl)
	}
	if err := checkAcquire(key, owner, ttl); err != nil {
		return lock.Lease{}, err
	}
	if err := l.ensure(ctx); err != nil {
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, err)
	}
	// Close cancels the wait, as ctx does: a wait must not outlive the lock and
	// take a lease nobody renews.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.waits, cancel)()
	s, err := l.takeIdle(ctx)
	if err != nil {
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, err)
	}
	b := &pgx.Batch{}
	b.Queue(lockTimeoutSQL, strconv.FormatInt(ms(wait), 10))
	b.Queue(waitLockSQL, keyHash(key))
	b.Queue(lockTimeoutSQL, "0")
	b.Queue(fmt.Sprintf(waitedSQL, l.table), key, owner, ms(ttl), int64(lock.MaxToken), strconv.FormatInt(ms(ttl), 10))
	var token *int64
	br := s.conn.SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		err = br.QueryRow().Scan(&token, new(string))
	}
	err = errors.Join(err, br.Close())
	var pe *pgconn.PgError
	switch {
	case err != nil && errors.As(err, &pe) && pe.Code == lockNotAvailable && !s.conn.IsClosed():
		// The wait timed out before the lock was granted, and the transaction
		// rolled back with its lock_timeout: the session holds nothing.
		l.putIdle(s)
		return lock.Lease{}, fmt.Errorf("acquire %q: still held after waiting %v: %w", key, wait, lock.ErrHeld)
	case err != nil:
		s.close() // whatever it took, closing frees it
		if l.waits.Err() != nil {
			return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, errClosed)
		}
		if ctx.Err() != nil {
			return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, ctx.Err())
		}
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, err)
	case token == nil:
		if _, err := s.conn.Exec(ctx, unlockSQL, keyHash(key)); err != nil {
			s.close()
		} else {
			l.putIdle(s)
		}
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, lock.ErrFenceExhausted)
	}
	return l.hold(s, key, owner, uint64(*token), ttl)
}
