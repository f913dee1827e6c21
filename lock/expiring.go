package lock

import (
	"context"
	"time"
)

// Expiring is a Lock that can take a key whose record — its fencing counter, and
// whatever else the backend keeps per key — disappears on its own fenceTTL after the
// acquire. It is for keys taken once and never again (a cron tick's lease, a
// batch's), whose records would otherwise pile up in the backend, one per key.
// cronentry's OncePerFleet takes each tick's lease through it when its Lock
// implements it; rediskit, pgkit, etcdkit and kubekit's locks and Memory do.
//
// While the record lives, tokens for the key strictly increase as with Acquire; once
// it is gone, the next acquire of the key starts the counter again from 1. That is
// harmless for a key that is never reused, and wrong for a lease that fences a
// store: never take such a lease with AcquireExpiring. fenceTTL should exceed ttl,
// so that the record outlives the lease. A later plain Acquire of the key makes its
// record permanent again.
type Expiring interface {
	Lock
	// AcquireExpiring is Acquire, and sets key's record to expire fenceTTL from now.
	// A fenceTTL that is not positive is a *fault.ConfigError naming "fenceTTL".
	AcquireExpiring(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (Lease, error)
}
