package lock

import (
	"context"
	"errors"
	"time"
)

// MaxToken is the highest fencing token a lock hands out. Redis scripts compute in
// IEEE doubles, which hold every integer up to 2^53 exactly; the in-memory lock keeps
// the same ceiling so that both behave alike. At one term a millisecond it lasts
// longer than a quarter of a million years.
const MaxToken uint64 = 1<<53 - 1

// Sentinel errors of a Lock. Implementations wrap them; test with errors.Is.
var (
	// ErrHeld: Acquire found the lock held, by another owner or by another lease of
	// the same owner.
	ErrHeld = errors.New("lock: lock is held")
	// ErrNotHeld: Renew or Release was given a lease that is no longer the one
	// stored (it lapsed, was released, or another lease replaced it).
	ErrNotHeld = errors.New("lock: lease is no longer held")
	// ErrFenceOutOfRange: AdvanceFence was asked for a floor the counter can never
	// pass (at or above MaxToken). No retry clears it.
	ErrFenceOutOfRange = errors.New("lock: fence floor is beyond what the lock's counter can pass")
	// ErrFenceExhausted: the fencing counter is at MaxToken, so no further lease can
	// be handed out. No retry clears it.
	ErrFenceExhausted = errors.New("lock: fencing counter is at its ceiling")
)

// Lease is one holding of a lock, as Acquire returned it. Renew and Release act only
// while the lock still stores this owner with this token.
type Lease struct {
	Key   string
	Owner string
	// Token is the fencing token: strictly greater than every token the lock handed
	// out for Key before, as long as the backend keeps its data (see AdvanceFence).
	Token uint64
	// TTL is the lease's lifetime from the moment the acquire or the latest renewal
	// reached the backend.
	TTL time.Duration
}

// Holder is what Inspect sees of a lock.
type Holder struct {
	// Owner and Token of the current lease; Owner is "" when the lock is free.
	Owner string
	Token uint64
	// TTL is the time left before the current lease lapses; 0 when free.
	TTL time.Duration
	// Fence is the counter: the last token handed out, or the floor it was advanced
	// to, whichever is higher. The next Acquire draws Fence+1.
	Fence uint64
}

// Held reports whether a lease is current.
func (h Holder) Held() bool { return h.Owner != "" }

// Lock is a lease-based mutual exclusion with fencing tokens, shared by every replica
// that uses the same backend. Implementations must be safe for concurrent use.
//
// A lease alone does not make a holder the only one acting: a holder that pauses past
// its TTL acts beside its successor when it resumes. Pass Lease.Token with every
// write and have the store refuse tokens lower than the highest it has seen; that is
// what the token is for.
type Lock interface {
	// Acquire takes the lock for owner for ttl when nobody holds it, drawing the
	// next fencing token. It returns ErrHeld when the lock is held, ErrFenceExhausted
	// when the counter is at MaxToken, and a *fault.ConfigError for an empty key or owner
	// or a non-positive ttl. The counter is never reset or expired by the lock
	// itself; only a backend that loses its data starts it again from zero.
	Acquire(ctx context.Context, key, owner string, ttl time.Duration) (Lease, error)
	// Renew extends lease to its TTL from now, only if the lock still stores the
	// lease's owner and token; otherwise it returns ErrNotHeld.
	Renew(ctx context.Context, lease Lease) error
	// Release frees the lock, only if it still stores the lease's owner and token;
	// otherwise it returns ErrNotHeld and changes nothing.
	Release(ctx context.Context, lease Lease) error
	// AdvanceFence moves key's counter to at least floor, so the next Acquire draws
	// a token above floor. A counter already there is left alone. It returns
	// ErrFenceOutOfRange when floor ≥ MaxToken and ErrFenceExhausted when the
	// counter is already at MaxToken. A lock that cannot advance its counter returns
	// an error wrapping errors.ErrUnsupported.
	AdvanceFence(ctx context.Context, key string, floor uint64) error
	// Inspect reads the lock's current lease and counter without changing them.
	Inspect(ctx context.Context, key string) (Holder, error)
}
