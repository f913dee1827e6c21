// Package pgkit holds what servicewright needs of PostgreSQL, beside the pgx driver
// so that the core packages link no driver: a lock.Lock on session advisory locks
// with fencing tokens and release notices (Lock), and an fx module that provides it
// from a URL (Module).
//
// Choose it for leadership when the fleet runs PostgreSQL and a crashed leader must
// be replaced at once: the server frees a lease the moment its holder's connection
// closes, and a replica waiting on the lock (AcquireWait, lock.Waiter) is granted it
// in the same instant, so the next replica leads within a round trip, where a Redis
// lease is held until its TTL lapses. A graceful release also NOTIFYs the waiting
// replicas. A paused or partitioned leader keeps its lease until the server ends its
// session: at the session's idle_session_timeout (the lease's TTL), or sooner when
// the server's dead-client detection gives up on a silent connection
// (LockConfig.DeadClient, set on every session). EarliestRelease declares the sooner
// of the two, and a Leadership steps down before it; fencing tokens cover what a
// holder does after that.
//
// Each waiting campaigner holds a server session. A pooler that does not keep a
// session per client connection (PgBouncer in transaction or statement mode) breaks
// the lock: advisory locks, idle_session_timeout and the keepalives are per session.
package pgkit
