package pgkit

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/lockarg"
	"github.com/servicewright/servicewright/internal/wake"
	"github.com/servicewright/servicewright/lock"
)

var (
	_ lock.Lock         = (*Lock)(nil)
	_ lock.Notifier     = (*Lock)(nil)
	_ lock.ReleaseBound = (*Lock)(nil)
	_ lock.Waiter       = (*Lock)(nil)
	_ lock.Expiring     = (*Lock)(nil)
)

// defaultTable names the fence table a Lock creates and writes (LockConfig.Table).
const defaultTable = "servicewright_lock"

// maxIdle is how many sessions that hold no lease a Lock keeps open for the next
// acquires.
const maxIdle = 2

// Lock is a lock.Lock on PostgreSQL. A lease is a session-level advisory lock
// (pg_try_advisory_lock on a 64-bit hash of the key) held by a connection dedicated
// to it, so:
//
//   - the server frees the lease the moment the holder's connection closes — a
//     crashed or killed process, a killed backend, a server restart — and the next
//     replica takes it at its next campaign, without waiting out a TTL;
//   - the lease's TTL is the session's idle_session_timeout, set on the connection
//     in the acquiring statement: a holder that sends nothing for a TTL (a paused
//     process, a partition) has its session ended, and its lease freed, by the
//     server. Renew is a query on that connection, which restarts the timer; a
//     renewal that finds the session gone returns lock.ErrNotHeld;
//   - the fencing token comes from a fence row of Table, incremented in the same
//     statement that takes the advisory lock; the row also records the holder, which
//     Inspect reads with pg_locks. Holder.TTL is the lease's TTL, not the time left.
//   - Release unlocks and NOTIFYs the key's channel with the releasing owner, in one
//     statement; WatchReleases LISTENs on one connection shared by every watch.
//
// Each held lease costs a connection; so do Inspect and AdvanceFence (one shared
// connection) and the watches (another), and up to two idle connections are kept
// for the next acquire. A ctx that ends a call on a lease's connection mid-query
// closes the connection, which ends that lease. The server also gives up on a
// silent connection (LockConfig.DeadClient: keepalives idle 10s, interval 1s, 3
// probes, and a 13s TCP_USER_TIMEOUT by default), so a holder whose host vanished or
// that is cut off by a partition loses its lease after about 13s, within the default
// TTL; EarliestRelease declares that bound, and a Leadership steps down before it.
//
// AcquireWait (lock.Waiter) queues a campaigner on the advisory lock itself, on its
// own session: a killed holder's lease passes to a waiter as soon as the server sees
// the holder's socket close, in one round trip. Each waiting campaigner costs a
// server session (a connection and a backend process) for as long as it waits.
//
// A lease taken once and left to lapse (a cron tick's) holds its connection until
// the server ends the session at the TTL; the lock closes what is left of it at a
// later acquire. Each key keeps its fence row, unless it was taken with
// AcquireExpiring (lock.Expiring): its row then records an expiry, on the server's
// clock, and a later AcquireExpiring of any key deletes the rows past it.
//
// It needs PostgreSQL 14 or later (idle_session_timeout); an older server is a
// *fault.ConfigError at first use. Connection poolers in transaction mode (PgBouncer's default) do not keep sessions
// and must not sit between a Lock and the server.
type Lock struct {
	connect func(ctx context.Context) (*pgx.Conn, error)
	table   string     // quoted identifier
	dead    DeadClient // with defaults

	mu     sync.Mutex
	held   map[string]*session // sessions that hold a lease, by key
	idle   []*session          // sessions that hold none
	closed bool
	waits  context.Context // cancelled by Close: ends every AcquireWait in flight
	stop   context.CancelFunc

	admin    sync.Mutex // guards adminC and ensured
	adminC   *pgx.Conn
	ensured  bool
	hub      wake.Hub
	watch    sync.Mutex // guards listener
	listener *listener
}

// session is one connection and the lease it holds, if any.
type session struct {
	mu      sync.Mutex
	conn    *pgx.Conn
	owner   string
	token   uint64
	expires time.Time // the server ends the session after this unless renewed
}

// NewLock returns a Lock for cfg. It validates cfg into a *fault.ConfigError naming
// each field, and opens no connection: each is opened when first needed.
func NewLock(cfg LockConfig) (*Lock, error) {
	var l fault.Problems
	connect := cfg.connector(&l)
	cfg = cfg.resolve(&l)
	if err := l.Err(); err != nil {
		return nil, err
	}
	table := pgx.Identifier(strings.Split(cfg.Table, ".")).Sanitize()
	waits, stop := context.WithCancel(context.Background())
	return &Lock{connect: connect, table: table, dead: cfg.DeadClient, held: map[string]*session{}, waits: waits, stop: stop}, nil
}

// keyHash is the advisory lock's key for a lock name.
func keyHash(key string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int64(h.Sum64())
}

// channel is the NOTIFY channel of a lock name: an identifier of fixed length.
func channel(h int64) string { return "swlock_" + strconv.FormatUint(uint64(h), 16) }

func ms(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// EarliestRelease implements lock.ReleaseBound: the server frees a silent holder's
// lease when its session ends, at the earliest of idle_session_timeout (ttl) and its
// detection of a dead client (DeadClient: keepalive idle + count × interval, or
// TCP_USER_TIMEOUT), counted from the last packet it received, which is no earlier
// than the acquire or renewal was sent.
func (l *Lock) EarliestRelease(ttl time.Duration) time.Duration {
	return min(ttl, l.dead.within())
}

func checkAcquire(key, owner string, ttl time.Duration) error {
	if err := lockarg.Acquire(key, owner, ttl); err != nil {
		return err
	}
	if ms(ttl) > math.MaxInt32 {
		return fault.Invalid("ttl", "must be at most %v, the longest idle_session_timeout PostgreSQL takes, got %v",
			time.Duration(math.MaxInt32)*time.Millisecond, ttl)
	}
	return nil
}

// Acquire implements lock.Lock. A ttl above the server's limit for
// idle_session_timeout (about 24.8 days) is a *fault.ConfigError.
func (l *Lock) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (lock.Lease, error) {
	if err := checkAcquire(key, owner, ttl); err != nil {
		return lock.Lease{}, err
	}
	return l.acquire(ctx, key, owner, ttl, 0)
}

// AcquireExpiring implements lock.Expiring: the key's fence row records an expiry
// fenceTTL from now on the server's clock, past which the next acquire of the key
// counts from 0 again. First, in a statement of its own on the same connection, it
// deletes the rows of every key whose expiry has passed; so the rows of keys taken
// once each (cron ticks) stay those of the last fenceTTL.
func (l *Lock) AcquireExpiring(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (lock.Lease, error) {
	if err := lockarg.Expiring(key, owner, ttl, fenceTTL); err != nil {
		return lock.Lease{}, err
	}
	if err := checkAcquire(key, owner, ttl); err != nil {
		return lock.Lease{}, err
	}
	return l.acquire(ctx, key, owner, ttl, fenceTTL)
}

// acquire takes key; a positive fenceTTL first sweeps the expired rows and gives
// key's row an expiry, 0 makes it permanent.
func (l *Lock) acquire(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (lock.Lease, error) {
	if err := l.ensure(ctx); err != nil {
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, err)
	}
	s, err := l.takeIdle(ctx)
	if err != nil {
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, err)
	}
	if fenceTTL > 0 {
		if _, err := s.conn.Exec(ctx, fmt.Sprintf(sweepSQL, l.table)); err != nil {
			s.close()
			return lock.Lease{}, fmt.Errorf("acquire %q: delete expired fence rows: %w", key, err)
		}
	}
	h := keyHash(key)
	var (
		got   bool
		token *int64
	)
	err = s.conn.QueryRow(ctx, fmt.Sprintf(acquireSQL, l.table), key, h, owner, ms(ttl), int64(lock.MaxToken), strconv.FormatInt(ms(ttl), 10), ms(fenceTTL)).Scan(&got, &token, new(string))
	switch {
	case err != nil:
		s.close() // whatever it took, closing frees it
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, err)
	case !got:
		l.putIdle(s)
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, lock.ErrHeld)
	case token == nil:
		if _, err := s.conn.Exec(ctx, unlockSQL, h); err != nil {
			s.close()
		} else {
			l.putIdle(s)
		}
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, lock.ErrFenceExhausted)
	}
	return l.hold(s, key, owner, uint64(*token), ttl)
}

// hold records s as the session holding key's lease. A Lock closed meanwhile
// closes s instead, which frees the lease, and returns an error.
func (l *Lock) hold(s *session, key, owner string, token uint64, ttl time.Duration) (lock.Lease, error) {
	s.owner, s.token, s.expires = owner, token, time.Now().Add(ttl)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		s.close()
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, errClosed)
	}
	old := l.held[key]
	l.held[key] = s
	lapsed := l.lapsedLocked(time.Now())
	l.mu.Unlock()
	if old != nil { // its session is gone on the server, or we could not have taken the lock
		old.close()
	}
	for _, s := range lapsed {
		s.close()
	}
	return lock.Lease{Key: key, Owner: owner, Token: token, TTL: ttl}, nil
}

// lapsedLocked removes and returns the sessions whose lease the server has ended
// already (idle past the TTL): leases taken once and left to lapse, such as a cron
// tick's, would otherwise pile up. l.mu is held.
func (l *Lock) lapsedLocked(now time.Time) []*session {
	var out []*session
	for k, s := range l.held {
		if s.mu.TryLock() {
			if now.After(s.expires.Add(time.Second)) {
				delete(l.held, k)
				out = append(out, s)
			}
			s.mu.Unlock()
		}
	}
	return out
}

// holding returns the session that holds lease, locked, or an error wrapping
// lock.ErrNotHeld.
func (l *Lock) holding(op string, lease lock.Lease) (*session, error) {
	l.mu.Lock()
	s := l.held[lease.Key]
	l.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		if s.conn != nil && s.owner == lease.Owner && s.token == lease.Token {
			return s, nil
		}
		s.mu.Unlock()
	}
	return nil, fmt.Errorf("%s %q token %d: %w", op, lease.Key, lease.Token, lock.ErrNotHeld)
}

// lost drops s, whose query failed: a session whose connection closed has lost its
// lease (the server freed it), which is ErrNotHeld; any other error is returned
// as it is. Called with s.mu held.
func (l *Lock) lost(op string, lease lock.Lease, s *session, err error) error {
	if s.conn.IsClosed() {
		l.mu.Lock()
		if l.held[lease.Key] == s {
			delete(l.held, lease.Key)
		}
		l.mu.Unlock()
		s.conn = nil
		return fmt.Errorf("%s %q token %d: session ended (%w): %w", op, lease.Key, lease.Token, err, lock.ErrNotHeld)
	}
	return fmt.Errorf("%s %q: %w", op, lease.Key, err)
}
