// Package lockarg checks the arguments of a lock.Lock's methods, once for every
// implementation in the module (lock.Memory and the Redis, PostgreSQL, etcd and
// Kubernetes locks): each check returns a *fault.ConfigError naming every bad
// argument as the Lock contract states ("key", "owner", "ttl", "fenceTTL",
// "lease.Token"), or nil. lock/locktest holds any implementation, in this module or
// not, to the same errors.
//
// It takes the lease's fields rather than a lock.Lease so that package lock itself
// can use it.
package lockarg
