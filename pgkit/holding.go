package pgkit

// What a holder does after Acquire (Renew, Release), the counter a key keeps (AdvanceFence, Inspect), and Close.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/servicewright/servicewright/internal/lockarg"
	"github.com/servicewright/servicewright/lock"
)

// Renew implements lock.Lock: one query on the lease's connection, which restarts
// the session's idle timer. A session the server ended (idle past the TTL, killed,
// restarted) is lock.ErrNotHeld.
func (l *Lock) Renew(ctx context.Context, lease lock.Lease) error {
	if err := lockarg.Lease(lease.Key, lease.Owner, lease.TTL, lease.Token); err != nil {
		return err
	}
	s, err := l.holding("renew", lease)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	sent := time.Now()
	if _, err := s.conn.Exec(ctx, renewSQL); err != nil {
		return l.lost("renew", lease, s, err)
	}
	s.expires = sent.Add(lease.TTL)
	return nil
}

// Release implements lock.Lock: it unlocks and NOTIFYs the key's channel in one
// statement, and keeps the connection for a later acquire.
func (l *Lock) Release(ctx context.Context, lease lock.Lease) error {
	if err := lockarg.Lease(lease.Key, lease.Owner, lease.TTL, lease.Token); err != nil {
		return err
	}
	s, err := l.holding("release", lease)
	if err != nil {
		return err
	}
	h := keyHash(lease.Key)
	var unlocked bool
	err = s.conn.QueryRow(ctx, releaseSQL, h, channel(h), lease.Owner).Scan(&unlocked, new(string), new(string))
	if err != nil {
		err = l.lost("release", lease, s, err)
		s.mu.Unlock()
		return err
	}
	s.owner, s.token = "", 0
	s.mu.Unlock()
	l.mu.Lock()
	if l.held[lease.Key] == s {
		delete(l.held, lease.Key)
	}
	l.mu.Unlock()
	l.putIdle(s)
	if !unlocked {
		return fmt.Errorf("release %q token %d: the session did not hold it: %w", lease.Key, lease.Token, lock.ErrNotHeld)
	}
	return nil
}

// AdvanceFence implements lock.Lock.
func (l *Lock) AdvanceFence(ctx context.Context, key string, floor uint64) error {
	if err := lockarg.Key(key); err != nil {
		return err
	}
	if floor >= lock.MaxToken {
		return fmt.Errorf("advance %q to %d: %w", key, floor, lock.ErrFenceOutOfRange)
	}
	return l.withAdmin(ctx, "advance", key, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, fmt.Sprintf(advanceSQL, l.table), key, int64(floor), int64(lock.MaxToken))
		if err == nil && tag.RowsAffected() == 0 {
			return lock.ErrFenceExhausted
		}
		return err
	})
}

// Inspect implements lock.Lock. Held is read from pg_locks; Owner and Token from
// the fence row, written by the statement that took the lock.
func (l *Lock) Inspect(ctx context.Context, key string) (lock.Holder, error) {
	if err := lockarg.Key(key); err != nil {
		return lock.Holder{}, err
	}
	var h lock.Holder
	err := l.withAdmin(ctx, "inspect", key, func(c *pgx.Conn) error {
		var (
			owner        string
			token, fence int64
			ttl          int64
			held         bool
		)
		k := keyHash(key)
		err := c.QueryRow(ctx, fmt.Sprintf(inspectSQL, l.table), key, int64(uint64(k)>>32), int64(uint64(k)&math.MaxUint32)).
			Scan(&owner, &token, &fence, &ttl, &held)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		h.Fence = uint64(fence)
		if held {
			h.Owner, h.Token, h.TTL = owner, uint64(token), time.Duration(ttl)*time.Millisecond
		}
		return nil
	})
	return h, err
}

// Close ends every session of the lock, which frees the leases it holds (without
// a release notice), cancels the waits in flight (AcquireWait) and stops its
// watches. It returns once they are closed or ctx
// is done. The Lock is not usable afterwards.
func (l *Lock) Close(ctx context.Context) error {
	l.stop() // the waits close their own sessions
	l.mu.Lock()
	l.closed = true
	all := append([]*session(nil), l.idle...)
	for _, s := range l.held {
		all = append(all, s)
	}
	l.held, l.idle = map[string]*session{}, nil
	l.mu.Unlock()
	for _, s := range all {
		s.mu.Lock()
		if s.conn != nil {
			_ = s.conn.Close(ctx)
			s.conn = nil
		}
		s.mu.Unlock()
	}
	l.admin.Lock()
	if l.adminC != nil {
		_ = l.adminC.Close(ctx)
		l.adminC = nil
	}
	l.admin.Unlock()
	l.stopListener()
	return ctx.Err()
}
