// Package lock defines the lease lock that leadership, singleton steps and
// once-per-fleet cron jobs share across the replicas of a fleet, and keeps an
// in-process implementation of it. It links no backend driver: the Redis lock is in
// package rediskit and the PostgreSQL lock in package pgkit, beside their drivers, so
// that core packages can depend on the interface alone.
//
// A Lock is a lease with a fencing token. Acquire draws a token from a counter that
// only grows; Renew and Release act only while the lock still stores the same owner
// and token. A Lock that also implements Notifier announces each release, so that
// waiting replicas campaign at once instead of at their next poll. A Lock that
// implements Expiring takes keys used once (a cron tick's) whose record the backend
// drops on its own after an expiry, so they do not pile up.
//
// Memory keeps leases in the process, for tests, single-process deployments and
// embedded defaults, with the same semantics as the backends. Package
// lock/locktest holds the contract every implementation passes.
package lock
