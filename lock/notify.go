package lock

import "context"

// Notifier is implemented by a Lock that announces each release of a lease, so that
// the replicas waiting for it campaign at once rather than at their next poll. A
// notice is a hint and nothing more: it can be lost (pub/sub is fire and forget, a
// connection drops), merged with another, or arrive after someone else took the
// lock. Acquire still decides, and a waiter keeps polling as if there were no
// notices at all.
//
// A lease that lapses at its TTL is not announced.
type Notifier interface {
	// WatchReleases starts telling about releases of key by any owner other than
	// self. Each release sends on notices, which holds one pending notice; more are
	// merged into it. stop ends the watch and returns once everything the watch
	// started for it has exited; it may be called more than once. The watch does
	// not outlive stop, whatever ctx does; ctx bounds only the setup. An error
	// means no watch was started: poll.
	WatchReleases(ctx context.Context, key, self string) (notices <-chan struct{}, stop func(), err error)
}

// Status is one lease as a process reports it (the Host's /debug/lifecycle): whether
// this process holds it, and with which fencing token (0 when not held).
type Status struct {
	Held  bool   `json:"held"`
	Token uint64 `json:"token"`
}
