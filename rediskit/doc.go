// Package rediskit holds what servicewright needs of Redis, beside the go-redis
// driver so that the core packages link no driver: a lock.Lock with fencing tokens
// and release notices (Lock), a readiness check (Check), and an fx module that
// provides the client, the lock and the check from a URL (Module).
//
// Choose Redis for leadership when the fleet already runs it: a graceful hand-over
// takes one round trip (the release publishes on the key's channel and the waiting
// replicas campaign at once), but a crashed leader's lease is held until its TTL
// lapses. The PostgreSQL lock (package pgkit) frees a crashed leader's lease when
// its connection closes.
package rediskit
