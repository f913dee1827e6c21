package lock

import (
	"context"
	"errors"
	"time"
)

// ErrDuplicateOwner: Renew or Release found the lock held by a lease of the same
// owner with another token — two live processes share one owner id, or a lease of
// this owner was taken again after its own lapsed. It is returned together with
// ErrNotHeld (errors.Is matches both). Owner ids must be unique per process; two
// that are not take the lease from each other.
var ErrDuplicateOwner = errors.New("lock: the lease is held by another holder with the same owner id")

// ReleaseBound is implemented by a Lock that declares the earliest moment it can hand
// a lease to another owner when the holder goes silent (paused, partitioned, its host
// gone): a holder that stops acting before then never acts beside its successor.
//
// A Leadership derives its soft deadline from it and refuses, at construction,
// timings that cannot keep that promise. A Lock that does not implement it is taken
// to release a lease at its TTL and never earlier.
type ReleaseBound interface {
	// EarliestRelease returns how long after an Acquire or Renew of a lease of ttl
	// was sent the backend may, at the earliest, give the lease to another owner if
	// it hears nothing more from the holder. It is at most ttl.
	EarliestRelease(ttl time.Duration) time.Duration
}

// EarliestRelease returns l's declared earliest release for a lease of ttl, or ttl
// when l declares none (or declares more than ttl).
func EarliestRelease(l Lock, ttl time.Duration) time.Duration {
	if b, ok := l.(ReleaseBound); ok {
		return min(b.EarliestRelease(ttl), ttl)
	}
	return ttl
}

// Waiter is implemented by a Lock whose backend can queue a campaigner on a held
// lease, so that it gets the lease within one round trip of the holder's release —
// or of its crash, when the backend frees a crashed holder's lease at once.
type Waiter interface {
	// AcquireWait is Acquire that, when the lock is held, waits up to wait on the
	// backend for it to be freed, then takes it. It returns ErrHeld when wait
	// passes with the lock still held, and ctx's error when ctx is done first
	// (whatever the wait took is then freed). ctx bounds the call as for Acquire.
	AcquireWait(ctx context.Context, key, owner string, ttl, wait time.Duration) (Lease, error)
}
