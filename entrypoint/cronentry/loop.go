package cronentry

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// maxSleep caps one wait of the scheduling goroutine. Ticks are wall-clock times
// while timers run on the monotonic clock, so the goroutine re-reads the wall clock
// at least this often: a clock stepped forward is noticed within maxSleep, and one
// stepped back only delays the ticks to their wall-clock time.
const maxSleep = time.Minute

// maxCatchUp bounds how many missed ticks of one job are counted one by one at a
// wake; past it the job jumps to its first tick after now (a per-second job after
// a pause of a day, say), and the ticks jumped over are logged, not counted.
const maxCatchUp = 100_000

// loop is the scheduling goroutine: it sleeps until the earliest tick of any job,
// then hands every tick that is due to fire, until quit is closed.
func (s *Scheduler) loop(ctx context.Context, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	now := time.Now().Round(0) // wall clock only: ticks are wall-clock times
	for _, j := range s.jobs {
		j.plan(now)
	}
	timer := time.NewTimer(s.wait(now))
	defer timer.Stop()
	for {
		select {
		case <-quit:
			return
		case <-timer.C:
		}
		if s.afterWake != nil {
			s.afterWake()
		}
		select {
		case <-quit: // Drain came while we slept: take no tick
			return
		default:
		}
		now = time.Now().Round(0)
		for _, j := range s.jobs {
			s.due(ctx, j, now)
		}
		timer.Reset(s.wait(now))
	}
}

// wait returns how long to sleep from now until the earliest planned tick.
func (s *Scheduler) wait(now time.Time) time.Duration {
	d := maxSleep
	for _, j := range s.jobs {
		if !j.fire.IsZero() {
			d = min(d, j.fire.Sub(now))
		}
	}
	return max(d, 0)
}

// due handles every tick of j whose fire time has come by now, in order, and plans
// the next one. A tick reached more than MissedAfter past its fire time is missed:
// with SkipMissed it counts skipped_missed; otherwise due keeps the latest missed tick
// to run, counting the ones before it, and drops that one too when an on-time tick
// follows, which then runs with the missed ones in Tick.Missed.
func (s *Scheduler) due(ctx context.Context, j *job, now time.Time) {
	var (
		held   *Tick // the latest missed tick, to run once (unless SkipMissed)
		carry  int   // missed ticks not run, for the next run's Tick.Missed
		missed int   // missed ticks at this wake, for the log
		first  time.Time
		n      int
	)
	for !j.next.IsZero() && !j.fire.After(now) {
		t := Tick{Job: j.Name, Scheduled: j.next}
		late := now.Sub(j.fire) > j.missedAfter
		if n++; n > maxCatchUp {
			s.log.Warn("cron job missed too many ticks to count; jumping to its next tick",
				zap.String("job", j.Name), zap.Time("from", j.next), zap.Time("now", now))
			j.plan(now)
			break
		}
		j.plan(j.next)
		if !late {
			if held != nil {
				s.record(j, skippedMissed)
				carry, held = carry+1, nil
			}
			t.Missed, carry = carry, 0
			s.fire(ctx, j, t)
			continue
		}
		if missed++; missed == 1 {
			first = t.Scheduled
		}
		if j.SkipMissed {
			s.record(j, skippedMissed)
			continue
		}
		if held != nil {
			s.record(j, skippedMissed)
			carry++
		}
		held = &t
	}
	if held != nil {
		held.Missed = carry
		s.fire(ctx, j, *held)
	}
	if missed > 0 {
		policy := "run_once"
		if j.SkipMissed {
			policy = "skip"
		}
		s.log.Warn("cron ticks missed: the scheduler reached them late (process paused or clock stepped)",
			zap.String("job", j.Name), zap.Int("missed", missed), zap.Time("first", first),
			zap.String("policy", policy), zap.Bool("ran_once", held != nil))
	}
}
