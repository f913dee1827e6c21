package lock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/servicewright/servicewright/internal/lockarg"
	"github.com/servicewright/servicewright/internal/wake"
)

var (
	_ Lock     = (*Memory)(nil)
	_ Notifier = (*Memory)(nil)
	_ Expiring = (*Memory)(nil)
)

// Memory is a Lock for the replicas of one process (tests, a single-process
// deployment, the example on embedded defaults). It has the same semantics as the
// Redis and PostgreSQL locks, including fencing tokens, expiry and release notices
// (Notifier), and reads the clock through time.Now, so under testing/synctest its
// leases expire in virtual time.
//
// A key taken with AcquireExpiring (Expiring) is forgotten — lease and counter —
// once its fenceTTL has passed and its lease has lapsed, at the next call that
// touches the Memory; a key taken with Acquire is kept for the Memory's life.
//
// The zero value is ready to use. A Memory must not be copied after first use.
type Memory struct {
	mu     sync.Mutex
	leases map[string]memLease
	fences map[string]uint64
	expiry map[string]time.Time // keys taken with AcquireExpiring: when they are forgotten
	hub    wake.Hub
}

type memLease struct {
	owner   string
	token   uint64
	expires time.Time
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{} }

// current returns key's live lease, dropping a lapsed one. Called with mu held.
func (m *Memory) current(key string, now time.Time) (memLease, bool) {
	l, ok := m.leases[key]
	if ok && !now.Before(l.expires) {
		delete(m.leases, key)
		return memLease{}, false
	}
	return l, ok
}

func (m *Memory) init() {
	if m.leases == nil {
		m.leases = map[string]memLease{}
		m.fences = map[string]uint64{}
		m.expiry = map[string]time.Time{}
	}
}

// sweep forgets the keys taken with AcquireExpiring whose fenceTTL has passed, unless
// their lease is still live. Called with mu held, after init.
func (m *Memory) sweep(now time.Time) {
	for k, at := range m.expiry {
		if now.Before(at) {
			continue
		}
		if _, live := m.current(k, now); live {
			continue
		}
		delete(m.fences, k)
		delete(m.expiry, k)
	}
}

// Acquire implements Lock.
func (m *Memory) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (Lease, error) {
	if err := lockarg.Acquire(key, owner, ttl); err != nil {
		return Lease{}, err
	}
	return m.acquire(ctx, key, owner, ttl, 0)
}

// AcquireExpiring implements Expiring: the key's lease and counter are forgotten
// fenceTTL from now, once its lease has lapsed.
func (m *Memory) AcquireExpiring(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (Lease, error) {
	if err := lockarg.Expiring(key, owner, ttl, fenceTTL); err != nil {
		return Lease{}, err
	}
	return m.acquire(ctx, key, owner, ttl, fenceTTL)
}

// acquire takes key; a positive fenceTTL sets when it is forgotten, 0 keeps it.
func (m *Memory) acquire(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	now := time.Now()
	m.sweep(now)
	if _, held := m.current(key, now); held {
		return Lease{}, fmt.Errorf("acquire %q: %w", key, ErrHeld)
	}
	if m.fences[key] >= MaxToken {
		return Lease{}, fmt.Errorf("acquire %q: %w", key, ErrFenceExhausted)
	}
	m.fences[key]++
	tok := m.fences[key]
	m.leases[key] = memLease{owner: owner, token: tok, expires: now.Add(ttl)}
	if fenceTTL > 0 {
		m.expiry[key] = now.Add(fenceTTL)
	} else {
		delete(m.expiry, key)
	}
	return Lease{Key: key, Owner: owner, Token: tok, TTL: ttl}, nil
}

// Renew implements Lock.
func (m *Memory) Renew(ctx context.Context, lease Lease) error {
	if err := lockarg.Lease(lease.Key, lease.Owner, lease.TTL, lease.Token); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	cur, err := m.held("renew", lease, now)
	if err != nil {
		return err
	}
	cur.expires = now.Add(lease.TTL)
	m.leases[lease.Key] = cur
	return nil
}

// Release implements Lock.
func (m *Memory) Release(ctx context.Context, lease Lease) error {
	if err := lockarg.Lease(lease.Key, lease.Owner, lease.TTL, lease.Token); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.held("release", lease, time.Now()); err != nil {
		return err
	}
	delete(m.leases, lease.Key)
	m.hub.Notify(lease.Key, lease.Owner)
	return nil
}

// WatchReleases implements Notifier. It starts no goroutine.
func (m *Memory) WatchReleases(_ context.Context, key, self string) (<-chan struct{}, func(), error) {
	if err := lockarg.Key(key); err != nil {
		return nil, nil, err
	}
	ch, remove, _ := m.hub.Add(key, self)
	return ch, func() { remove() }, nil
}

// AdvanceFence implements Lock.
func (m *Memory) AdvanceFence(ctx context.Context, key string, floor uint64) error {
	if err := lockarg.Key(key); err != nil {
		return err
	}
	if floor >= MaxToken {
		return fmt.Errorf("advance %q to %d: %w", key, floor, ErrFenceOutOfRange)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	m.sweep(time.Now())
	if m.fences[key] >= MaxToken {
		return fmt.Errorf("advance %q: %w", key, ErrFenceExhausted)
	}
	m.fences[key] = max(m.fences[key], floor)
	return nil
}

// Inspect implements Lock.
func (m *Memory) Inspect(ctx context.Context, key string) (Holder, error) {
	if err := lockarg.Key(key); err != nil {
		return Holder{}, err
	}
	if err := ctx.Err(); err != nil {
		return Holder{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	now := time.Now()
	m.sweep(now)
	h := Holder{Fence: m.fences[key]}
	if cur, ok := m.current(key, now); ok {
		h.Owner, h.Token, h.TTL = cur.owner, cur.token, cur.expires.Sub(now)
	}
	return h, nil
}

// held returns the live lease of lease.Key if lease still owns it (same owner and
// token), or an error wrapping ErrNotHeld that names op. m.mu must be held.
func (m *Memory) held(op string, lease Lease, now time.Time) (memLease, error) {
	m.init()
	cur, ok := m.current(lease.Key, now)
	if ok && cur.owner == lease.Owner && cur.token != lease.Token {
		return memLease{}, fmt.Errorf("%s %q token %d: held by owner %q with token %d: %w: %w",
			op, lease.Key, lease.Token, lease.Owner, cur.token, ErrDuplicateOwner, ErrNotHeld)
	}
	if !ok || cur.owner != lease.Owner || cur.token != lease.Token {
		return memLease{}, fmt.Errorf("%s %q token %d: %w", op, lease.Key, lease.Token, ErrNotHeld)
	}
	return cur, nil
}
