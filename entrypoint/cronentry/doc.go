// Package cronentry runs scheduled jobs — cron expressions or fixed intervals, with
// jitter — as a servicewright entrypoint, so that a deploy neither loses a tick nor
// cuts a run in half, and optionally runs each tick on exactly one replica of a
// fleet.
//
// # Schedules
//
// A Job runs on a cron expression (Job.Schedule, parsed by robfig/cron/v3: five
// fields, or six with seconds first; @hourly and the other descriptors; @every;
// a CRON_TZ= prefix) or on a fixed interval (Job.Every). Only robfig's parser is
// used: the Scheduler keeps its own clock loop, so that it can stop taking ticks at
// Drain and run in virtual time under testing/synctest.
//
// Ticks are the same on every replica: expressions are read in UTC unless
// Job.Location or a CRON_TZ= prefix names a zone (never in time.Local, which may
// differ between hosts), and intervals fall on multiples of the interval since the
// Unix epoch, not counted from start-up. Tick.Scheduled is the nominal tick; Jitter
// delays the run by up to Jitter without changing it. Jitter is on by default — a
// tenth of the interval (JitterFraction, 0.1), at most 10s — so that replicas and jobs on one schedule do not start in step;
// Job.NoJitter turns it off.
//
// # Lifecycle
//
//  1. New parses and checks every job and returns a *fault.ConfigError (fault.ConfigError)
//     listing every problem by field (`Jobs["report"].Schedule: …`). Bind takes no
//     tick.
//  2. Serve starts the one scheduling goroutine and returns at stop while ticks
//     keep firing: a cron job is intake like any other, and goes on through the
//     drain delay.
//  3. Drain ends the schedule — a tick still waiting behind a run is dropped — and
//     waits for the runs in progress within its ctx; past it, it names the jobs
//     still running and leaves them to Stop. DrainReport names the runs that were
//     running, finished, and still run.
//  4. Stop cancels the runs' ctx and waits for them within its ctx; a run that
//     ignores its ctx is abandoned and named in the error, and the process exits
//     anyway.
//
// Every run has a goroutine the Scheduler owns and awaits; a panic is recovered,
// logged and counted, and the schedule goes on.
//
// # Overlap and missed ticks
//
// A tick that comes while the job's previous run still runs is skipped
// (OverlapSkip, the default), waits — at most one, the latest — behind it
// (OverlapQueue), or runs beside it (OverlapAllow). These act within one replica.
//
// A tick the scheduler reaches more than Job.MissedAfter (default 1 s) past its time
// was missed: the process was frozen, starved, or the wall clock stepped. By
// default one run stands in for all the ticks missed together, with Tick.Missed
// counting the others; with Job.SkipMissed they are all skipped and the job resumes
// at its next tick.
//
// # Once per fleet
//
// A job with OncePerFleet runs each tick on the one replica that takes the tick's
// lease ("cron:<job>:<tick in UTC>") from a lock.Lock; the others count
// skipped_other_replica. The lease is never released early — it lapses at its TTL —
// so that a replica reaching the tick late cannot run it again; and a replica that
// reaches a tick only after the tick's time plus the TTL does not try at all.
//
// A lock backend that loses its data (a Redis restart without persistence) forgets
// the ticks it guarded. Which guarantee holds then:
//
//   - without FleetLock.Claim, at most once: a replica that finds the job's epoch
//     changed (the lock lost its data) skips the tick, counts skipped_lock_lost
//     and logs a warning, so a tick that may have run before the loss never runs
//     again silently — and a tick may be skipped on every replica;
//   - with FleetLock.Claim (a claim in the job's own store, keyed by the tick),
//     exactly once, as long as the store keeps its claims: a replica whose claim
//     finds the tick taken counts skipped_claimed.
//
// See FleetLock for the reasoning and the limits.
//
// Register the Scheduler with Scheduler.Marks(): RequiresLongRunning always, plus
// MutatesSharedState and SingletonGuarded when every job that mutates shared state is
// guarded (a OncePerFleet job counts as both). A fleet.Fleet profile then
// refuses a mutating job that would run on every replica, and fleet.Serverless
// refuses the Scheduler.
//
// # Observability
//
// WithTelemetry's Registerer keeps servicewright_cron_runs_total{job,outcome} —
// every tick counts once, as ok, failed, panicked, cancelled, skipped_overlap,
// skipped_other_replica, skipped_missed, skipped_draining, lock_error,
// skipped_lock_lost or skipped_claimed — and
// servicewright_cron_run_duration_seconds{job}. Its Logger reports failures,
// panics, skips and missed ticks.
package cronentry
