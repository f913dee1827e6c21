// Package leader keeps work that must run on one replica at a time — a publisher, a
// sequencer, a coordinator — running on exactly one replica of a fleet, and hands
// it to another when that replica stops, crashes or is asked to.
//
// # Locks
//
// A lock.Lock is a lease with a fencing token, shared by every replica:
// rediskit.Lock keeps it in Redis, pgkit.Lock in PostgreSQL (a session advisory
// lock, freed by the server when a crashed holder's connection closes), and
// lock.Memory in the process, for tests and single-process deployments, with the
// same semantics. This package imports only the interface, and links no driver.
//
// # Leadership
//
// New makes an entrypoint. Every replica campaigns every CampaignEvery, and at once
// when the holder releases if the lock announces releases (lock.Notifier; see
// Config.Poll); the one that takes the lease renews it every RenewEvery and runs
// lead(ctx, term) until the term ends: lead returns, a renewal finds the lease gone,
// no renewal succeeds before the soft deadline, the replica yields to one that asked
// (Handoff), or the Host drains it. The body is told through term.Ended, gets
// YieldGrace to return, then its ctx is cancelled and it gets ReleaseTimeout more;
// the lease is released only once it has returned, and the release wakes the waiting
// replicas. The soft deadline is placed so that all of this finishes Margin before
// the backend could give the lease to another replica, counting from when the latest
// successful renewal was sent; New refuses timings that do not fit.
//
// # A start step on one replica
//
// NewSingleton guards a start step with a lock: the replica that takes it runs the
// step and releases it, the others skip it; register it with its Marks, which the
// Host's fleet profile accepts. The lock is held only while the step runs, without
// renewal, so the step must be idempotent, and a replica that starts later runs it
// again. What a SingletonStep does not guarantee: a step that outlives the TTL may
// run on two replicas at once, and a lock backend that loses its data (a Redis
// restart without persistence) forgets the holder. Steps that must never overlap
// fence their writes with the lease token, as a Leadership's body does.
//
// # Stepping down before anyone can take over
//
// A holder cut off from its backend — paused, partitioned, its host gone — must stop
// before the backend hands its lease to someone else. That moment is the lock's
// earliest release (lock.ReleaseBound), counted from when the last successful acquire
// or renewal was sent: on Redis the TTL; on PostgreSQL the sooner of the TTL (the
// session's idle_session_timeout) and the server's detection of a dead client (the
// keepalives and TCP_USER_TIMEOUT pgkit sets on each session: by default 10s + 3 ×
// 1s, and 13s, so 13s). A lock that declares nothing is taken to release at its TTL.
// The soft deadline is
//
//	last renewal sent + earliest release − Margin − YieldGrace − ReleaseTimeout
//
// and New refuses, as a *fault.ConfigError naming TTL and the fields summed, timings
// that break
//
//	RenewEvery + YieldGrace + ReleaseTimeout + Margin < earliest release (≤ TTL)
//
// so that a term whose renewals stop ends, its body told, unwound and its release
// tried, Margin before the earliest release. At the defaults on PostgreSQL that is
// 5 + 2 + 1 + 1 = 9s < 13s, and a term lives 9s after its last renewal.
//
// # Campaigning
//
// A replica that finds the lease held waits for its next campaign, drawn from
// [0.8, 1] × CampaignEvery. With a lock that announces releases (unless Poll), a release
// starts a campaign at once; the losers of that campaign draw their next wait from
// [0, CampaignEvery), so that a fleet woken together does not campaign in lock-step
// ever after. With a lock that can queue a campaigner on the backend (lock.Waiter:
// pgkit.Lock), a replica that finds the lease held waits on the lock itself for up to
// one interval, so a released or crashed holder's lease passes to it within a round
// trip; it sends one command per wait, and holds a server session while it waits.
//
// Every replica needs its own Config.Owner. A replica that finds the lease held under
// its own owner id, with a token no acquire of its own drew, logs an error naming the
// id and the key and counts servicewright_leadership_duplicate_owner_total{key}; it
// leaves that lease alone. A holder whose renewal finds its owner id with another
// token (lock.ErrDuplicateOwner) logs the same and ends its term as lost.
//
// In the Host's sequence: Bind checks the backend without failing on it; Serve starts
// the campaign and returns at stop still leading, so the term lasts through the drain
// delay; Drain ends the term and releases the lease (within Config.DrainTime, which the
// Host's DrainGrace must cover); Stop cuts what Drain left. A Leadership declares its
// own fleet marks (RequiresLongRunning), so the Serverless profile refuses it.
//
// # What is guaranteed, and what is not
//
// A lease alone does not make one replica the only one acting. It guarantees this
// much: a responsive leader whose body returns within ReleaseTimeout of being
// cancelled acts only while it holds the lease, and a body that checks term.Live()
// between units stops at its first check after a pause carried it past the soft
// deadline — Live reads the clock itself, before the leadership's timer has run.
//
// Nothing in the lease can stop the rest: the unit a pause interrupted, a body that
// ignores its term or its cancellation (it keeps the lease, unrenewed, until the TTL
// lapses, and may then run beside its successor), a backend whose clock jumps by more
// than Margin, or a Redis that lost its data (a restart without persistence, a
// failover to a replica that missed the latest writes) while the leader cannot yet
// know. Fencing covers those: pass term.Token with every write, and have the store
// refuse a token lower than the highest it has seen. Because tokens repeat after
// the lock loses its data, the first write of a term claims its token strictly
// (Config.Claim: `SET fence = :token WHERE fence < :token`) and later writes accept an
// equal one (`WHERE fence <= :token`); a write that matches no row means a newer
// leader has written, and lead should return. Config.FenceFloor lets the first term
// after such a loss draw a token above the store's fence at once, instead of
// climbing one token per campaign.
//
// Misconfiguration is refused at construction as a *fault.ConfigError.
// At run time, a callback (lead, Claim, MayCampaign, Prefer, FenceFloor) returning a
// *fault.ConfigError or an error marked with fault.Permanent (retrying cannot fix
// it), a fencing counter
// at its ceiling, or a fence floor the lock cannot pass stops campaigning for good,
// with an error log marked severity=critical, while the process stays up (see
// Leadership.Halted). Everything else — the backend gone, a slow callback — is logged
// and retried.
//
// Metrics (the registry of WithTelemetry or the Host): servicewright_leadership_held{key},
// servicewright_leadership_terms_ended_total{key,reason} and
// servicewright_leadership_duplicate_owner_total{key}; spans (its tracer provider):
// one "leadership.term" per term. A sustained rate of "lost"
// or "expired" means the lock backend is slow or unreachable from the leader.
package leader
