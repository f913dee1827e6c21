package cronentry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/lock"
)

// oncePerFleetMarks are the marks a OncePerFleet job counts with in Scheduler.Marks:
// it mutates shared state (why else run it once) and it is guarded. Never written.
var oncePerFleetMarks = fleet.Marks{MutatesSharedState: true, SingletonGuarded: true}

// FleetLock makes a job run each tick on exactly one replica: the replica that takes
// the tick's lease runs it, the others count skipped_other_replica. Make one with
// OncePerFleet, or as a literal.
//
// The lease's key is "cron:<job>:<tick>", the tick being Tick.Scheduled in UTC as
// RFC 3339 with as many fractional digits as it needs
// ("cron:report:2026-03-01T09:30:00Z"). Every replica computes the same ticks
// (intervals are anchored at the Unix epoch, zones default to UTC), so they contend
// for the same key.
//
// The lease is never released: it lapses at its TTL. Releasing it when the run ends
// would let a replica that reaches the tick later — its jitter drew longer, its
// clock is behind, it was paused — find the key free and run the tick a second time.
// Left in place, the key outlives every attempt: a replica attempts tick T only
// before T+TTL, and the key, taken at or after T, lives until at least T+TTL. A
// replica that reaches a tick at or after T+TTL counts it skipped_missed without
// trying the lock. Since each tick has its own key, holding it does not delay the
// next tick.
//
// TTL must exceed Jitter and is the default MaxRunTime of the job; a larger
// MaxRunTime is refused, so a run never outlives its lease (its fencing token,
// Tick.Token, stays the current one while it runs). Replicas' clocks must agree to
// well within TTL-Jitter.
//
// A lock backend that loses its data (a Redis restart without persistence) forgets
// the ticks it guarded. Without Claim, each replica checks the job's epoch (a
// sentinel counter "cron:<job>:epoch" in the same lock) after winning a tick's
// lease; an epoch that changed since it last looked means the data was lost, and
// the tick, with every tick scheduled before the moment the loss was seen, is
// skipped and counted skipped_lock_lost with a warning: at most once. With Claim the
// store decides: exactly once.
//
// What it does not guarantee: Overlap acts on one replica, so a run that outlasts
// the interval may overlap the next tick's run on another replica — keep MaxRunTime
// below the interval, or fence writes with Tick.Token.
//
// Each tick's key is taken once and never again, so its fencing counter is of no use
// once the tick is past. When Lock implements lock.Expiring (the locks of rediskit,
// whatever its LockConfig.FenceTTL, pgkit, etcdkit and kubekit, and lock.Memory do),
// the tick's lease is taken with AcquireExpiring and its record expires fenceAfter
// TTLs after the tick was claimed: the keys, rows or Leases a job leaves in the
// backend stay a handful, however many ticks it runs (a 10 s job would otherwise
// leave 8,640 a day). A lock that does not implement it keeps one small counter per
// tick.
type FleetLock struct {
	Lock  lock.Lock
	Owner string        // this replica's identity, e.g. INSTANCE_ID
	TTL   time.Duration // the lease's lifetime; see above
	// Claim, when set, claims the tick in the job's own store once the lease is
	// won and before Run, with the tick's Scheduled time as the idempotency key
	// (`INSERT INTO cron_runs (job, tick) … ON CONFLICT DO NOTHING`) and Tick.Token
	// for fencing. It returns false when the tick is claimed already; the tick then
	// counts skipped_claimed. An error counts lock_error. With Claim, each tick runs
	// exactly once as long as the store keeps its claims, even when the lock
	// backend loses its data. Without it, a loss of the lock's data is detected
	// through the job's epoch (see below) and the ticks it may have let run twice
	// are skipped instead: at most once, never twice silently.
	Claim func(ctx context.Context, tick Tick) (bool, error)

	epochs sync.Map // job name → *epochState
}

// OncePerFleet returns a FleetLock for Job.OncePerFleet: each tick runs on the one
// replica that takes its lease from lock under owner for ttl. Nothing is sent to the
// lock until a tick fires; New validates the arguments.
func OncePerFleet(lock lock.Lock, owner string, ttl time.Duration) *FleetLock {
	return &FleetLock{Lock: lock, Owner: owner, TTL: ttl}
}

// fenceAfter is how many TTLs a tick's counter outlives its claim: the lease lives
// one TTL, and no replica attempts the tick past T+TTL; the second is margin for
// clocks that disagree.
const fenceAfter = 2

// acquire takes tick key's lease, with a counter that expires when the lock can.
func (f *FleetLock) acquire(ctx context.Context, key string) (lock.Lease, error) {
	if el, ok := f.Lock.(lock.Expiring); ok {
		return el.AcquireExpiring(ctx, key, f.Owner, f.TTL, fenceAfter*f.TTL)
	}
	return f.Lock.Acquire(ctx, key, f.Owner, f.TTL)
}

// maxAcquire bounds one Acquire, whatever the TTL.
const maxAcquire = 5 * time.Second

func (f *FleetLock) check(l *fault.Problems, field string, j Job) {
	if f.Lock == nil {
		l.Addf(field+".Lock", "must not be nil")
	}
	if f.Owner == "" {
		l.Addf(field+".Owner", "must not be empty")
	}
	switch {
	case f.TTL <= 0:
		l.Addf(field+".TTL", "must be positive, got %v", f.TTL)
	case j.Jitter > 0 && f.TTL <= j.Jitter:
		l.Addf(field+".TTL", "must exceed Jitter (%v), or a replica whose jitter draws late finds the lease lapsed, got %v", j.Jitter, f.TTL)
	case j.MaxRunTime > f.TTL:
		l.Addf(field+".TTL", "must be at least MaxRunTime (%v), so that no run outlives its lease, got %v", j.MaxRunTime, f.TTL)
	}
}

// key is the lease's key for tick t of job.
func (f *FleetLock) key(job string, t time.Time) string {
	return "cron:" + job + ":" + t.UTC().Format(time.RFC3339Nano)
}

// claim tries to take tick t's lease. It returns succeeded with the lease's token and
// the deadline the run must end by, or the outcome that ends the tick here.
// The deadline is counted from before the Acquire was sent, so it falls before the
// lease's expiry on the backend's clock.
func (s *Scheduler) claim(ctx context.Context, j *job, t Tick) (outcome, uint64, time.Time) {
	f := j.OncePerFleet
	cutoff := t.Scheduled.Add(f.TTL)
	sent := time.Now()
	if !sent.Before(cutoff) {
		s.log.Warn("cron tick reached too late to run once per fleet: its lease may have lapsed and the tick run elsewhere",
			tickFields(t, zap.Duration("late", sent.Sub(t.Scheduled)), zap.Duration("ttl", f.TTL))...)
		return skippedMissed, 0, time.Time{}
	}
	limit := sent.Add(maxAcquire)
	if cutoff.Before(limit) {
		limit = cutoff
	}
	actx, cancel := context.WithDeadline(ctx, limit)
	defer cancel()
	var lease lock.Lease
	err := safe.Call(fmt.Sprintf("cron job %q lock", j.Name), func() error {
		var err error
		lease, err = f.acquire(actx, f.key(j.Name, t.Scheduled))
		return err
	})
	switch {
	case err == nil:
		t.Token = lease.Token
		if o := s.admitTick(actx, j, t); o != succeeded {
			return o, 0, time.Time{}
		}
		return succeeded, lease.Token, sent.Add(j.maxRun)
	case errors.Is(err, lock.ErrHeld):
		s.log.Debug("cron tick taken by another replica", tickFields(t)...)
		if f.Claim == nil {
			s.checkEpoch(actx, j, t, false) // learn the epoch; the tick is not ours either way
		}
		return skippedOtherReplica, 0, time.Time{}
	case ctx.Err() != nil:
		return cancelled, 0, time.Time{}
	}
	s.log.Error("cron tick not run: its fleet lock could not be taken", tickFields(t, zap.Error(err))...)
	return lockError, 0, time.Time{}
}

// Marks returns the fleet marks to register the Scheduler with: RequiresLongRunning
// always (a scheduler needs a process that keeps running); MutatesSharedState when a
// job mutates shared state (a OncePerFleet job counts as mutating and guarded); and
// SingletonGuarded when every such job is guarded (OncePerFleet, or declared
// SingletonGuarded). Under fleet.Fleet a Scheduler with a mutating job that runs on
// every replica is then refused.
func (s *Scheduler) Marks() fleet.Marks {
	m := fleet.Marks{RequiresLongRunning: true, SingletonGuarded: true}
	for _, j := range s.jobs {
		jm := j.Marks
		if j.OncePerFleet != nil {
			jm = oncePerFleetMarks
		}
		if jm.MutatesSharedState {
			m.MutatesSharedState = true
			m.SingletonGuarded = m.SingletonGuarded && jm.SingletonGuarded
		}
	}
	m.SingletonGuarded = m.SingletonGuarded && m.MutatesSharedState
	return m
}

// admitTick decides, once tick t's lease is won, whether the tick may run: through the
// job's Claim when it has one, otherwise through the epoch.
func (s *Scheduler) admitTick(ctx context.Context, j *job, t Tick) outcome {
	f := j.OncePerFleet
	if f.Claim == nil {
		return s.checkEpoch(ctx, j, t, true)
	}
	var ok bool
	err := safe.Call(fmt.Sprintf("cron job %q claim", j.Name), func() (err error) {
		ok, err = f.Claim(ctx, t)
		return err
	})
	switch {
	case err != nil:
		s.log.Error("cron tick not run: its claim failed", tickFields(t, zap.Error(err))...)
		return lockError
	case !ok:
		s.log.Info("cron tick claimed in the store already; not run here", tickFields(t)...)
		return skippedClaimed
	}
	return succeeded
}
