package cronentry

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// fire applies j's overlap policy to tick t and starts a run when the policy lets
// it. It is called by the scheduling goroutine.
func (s *Scheduler) fire(ctx context.Context, j *job, t Tick) {
	s.base.Lock()
	defer s.base.Unlock()
	if j.running > 0 {
		switch j.Overlap {
		case OverlapSkip:
			s.log.Warn("cron tick skipped: the previous run still runs", tickFields(t, zap.Int("running", j.running))...)
			s.record(j, skippedOverlap)
			return
		case OverlapQueue:
			if q := j.queued; q != nil {
				s.log.Warn("cron tick dropped from the queue: a newer tick replaces it", tickFields(*q)...)
				s.record(j, skippedOverlap)
			}
			j.queued = &t
			return
		}
	}
	s.startLocked(ctx, j, t)
}

// startLocked starts a run of j for t in a goroutine the Scheduler owns, admitted by
// the gate; once Drain or Stop has closed the gate, t is counted skipped_draining
// instead. Called with the base's lock held.
func (s *Scheduler) startLocked(ctx context.Context, j *job, t Tick) {
	leave, admitted := s.gate.Enter()
	if !admitted {
		s.record(j, skippedDraining)
		return
	}
	s.nextRun++
	r := activeRun{id: s.nextRun, job: j.Name, scheduled: t.Scheduled}
	s.active[r.id] = r
	j.running++
	go s.run(ctx, j, t, r.id, leave)
}

// run executes one run and then, when a tick waits behind it, starts that one. The
// next run is admitted before this one leaves the gate, so a Drain waiting on the
// gate never sees an empty moment between the two.
func (s *Scheduler) run(ctx context.Context, j *job, t Tick, id uint64, leave func()) {
	defer leave()
	s.execute(ctx, j, t)
	s.base.Lock()
	defer s.base.Unlock()
	delete(s.active, id)
	j.running--
	if q := j.queued; q != nil && j.running == 0 {
		j.queued = nil
		s.startLocked(ctx, j, *q)
	}
}

// execute takes the tick's fleet lease when the job needs one, calls Run with the
// ctx and Tick it is due, and counts the outcome.
func (s *Scheduler) execute(ctx context.Context, j *job, t Tick) {
	t.Fired = time.Now()
	var deadline time.Time
	if j.maxRun > 0 {
		deadline = t.Fired.Add(j.maxRun)
	}
	if j.OncePerFleet != nil {
		o, token, until := s.claim(ctx, j, t)
		if o != succeeded {
			s.record(j, o)
			return
		}
		t.Token, deadline = token, until
	}
	runCtx := ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	runCtx, span := s.startSpan(runCtx, t)
	start := time.Now()
	err := safe.Call(j.what, func() error { return j.Run(runCtx, t) })
	took := time.Since(start)
	j.stats.observe(took)

	o := succeeded
	var pe *fault.PanicError
	switch {
	case errors.As(err, &pe):
		o = panicked
		s.log.Error("cron run panicked", tickFields(t, zap.Any("panic", pe.Value), zap.ByteString("stack", pe.Stack))...)
	case err != nil && ctx.Err() != nil:
		o = cancelled
		s.log.Warn("cron run cancelled by stop", tickFields(t, zap.Error(err), zap.Duration("took", took))...)
	case err != nil:
		o = failed
		s.log.Error("cron run failed", tickFields(t, zap.Error(err), zap.Duration("took", took))...)
	default:
		s.log.Debug("cron run finished", tickFields(t, zap.Duration("took", took))...)
	}
	endSpan(span, o, err)
	s.report(runCtx, t, o, err)
	s.record(j, o)
}

// record counts tick t of j as ending in o.
func (s *Scheduler) record(j *job, o outcome) { j.stats.add(o, 1) }

// tickFields are the log fields naming a tick, followed by more.
func tickFields(t Tick, more ...zap.Field) []zap.Field {
	return append([]zap.Field{zap.String("job", t.Job), zap.Time("scheduled", t.Scheduled)}, more...)
}
