// Package fleet declares a service's deployment posture and the marks its units carry,
// so that mistakes only N replicas can make — twenty replicas running one migration at
// once, a leadership campaign in a process that is frozen between requests — are
// refused when the service is built instead of discovered in production.
//
// Under Fleet, a unit marked MutatesSharedState must also be SingletonGuarded; under
// Serverless, a unit marked RequiresLongRunning is refused. The Host applies Profile.Check
// to every warmup step, hook and entrypoint registration and reports each violation,
// naming the unit, in one ConfigError. The marks are declared by the unit's author:
// mutation cannot be detected, so the check is honest by declaration.
//
// NewSingleton makes the guard: it wraps a start step so that the replica that takes
// a lock runs it and the others skip it; register it with its Marks. It holds
// the lock only while the step runs, so the step must be idempotent, and a replica
// that starts later runs it again. For work that must run on one replica at a time
// for the life of the process, use a leader.Leadership, which declares its own marks.
//
// What a SingletonStep does not guarantee: the lock is not renewed, so a step that outlives
// the TTL may run on two replicas at once; and a lock backend that loses its data
// (a Redis restart without persistence) forgets the holder. Steps that must never
// overlap should fence their writes with the lease token, as package leader explains.
package fleet
