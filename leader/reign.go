package leader

import (
	"github.com/servicewright/servicewright/lock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// bodyResult is how Claim and lead ended a term on their own.
type bodyResult struct {
	reason string // reasonReleased, reasonUnclaimed or reasonFailed
	err    error
}

type renewResult struct {
	sent time.Time
	err  error
}

type yieldResult struct {
	yield bool
	err   error // fatal only
}

// reign runs one term: the body in its own goroutine, renewals every RenewEvery, the
// handoff check after each, until the term ends. It returns why it ended, whether the
// lease was kept because the body never returned, and an error when campaigning must
// stop for good.
func (l *Leadership) reign(base context.Context, lease lock.Lease, sent time.Time) (reason string, kept bool, fatal error) {
	s := &l.conf
	// The soft deadline leaves room for the grace, the unwind and the release
	// before the backend could give the lease to another (its earliest release, at
	// most the TTL), Margin early, counted from when the acquire or the latest
	// renewal was sent.
	life := s.life()
	term := newTerm(lease, sent.Add(life))
	log := l.log.With(zap.Uint64("token", lease.Token))
	l.term.Store(term)
	l.m.held.WithLabelValues(s.Key).Set(1)
	log.Info("leadership: term started")
	spanCtx, span := l.tracer.Start(base, "leadership.term", trace.WithAttributes(
		attribute.String("leadership.key", s.Key), attribute.String("leadership.owner", s.Owner),
		attribute.Int64("leadership.token", int64(lease.Token))))
	defer func() {
		span.SetAttributes(attribute.String("leadership.end_reason", reason))
		if fatal != nil {
			span.SetStatus(codes.Error, fatal.Error())
		}
		span.End()
	}()

	bodyCtx, cancelBody := context.WithCancel(spanCtx)
	defer cancelBody()
	body := make(chan bodyResult, 1)
	l.bg.Go(func() { body <- l.runBody(bodyCtx, term) })

	// Renewals and handoff checks are cancelled when the term ends.
	side, cancelSide := context.WithCancel(base)
	defer cancelSide()
	renewT := time.NewTimer(time.Until(sent.Add(s.RenewEvery)))
	defer renewT.Stop()
	softT := time.NewTimer(time.Until(term.Deadline()))
	defer softT.Stop()
	var (
		renewed <-chan renewResult // while a renewal is in flight
		yielded <-chan yieldResult // while a handoff check is in flight
		res     *bodyResult        // once the body returned
	)
	for reason == "" {
		select {
		case r := <-body:
			res, reason = &r, r.reason
		case <-l.quit:
			reason = reasonStopped
		case <-softT.C:
			reason = reasonExpired
			log.Warn("leadership: no renewal succeeded in time; ending the term before the lease can lapse")
		case <-renewT.C:
			renewed = l.startRenew(side, lease, term.Deadline())
		case r := <-renewed:
			renewed = nil
			switch {
			case r.err == nil:
				term.setDeadline(r.sent.Add(life))
				softT.Reset(time.Until(term.Deadline()))
				renewT.Reset(time.Until(r.sent.Add(s.RenewEvery)))
				if s.Handoff && yielded == nil {
					yielded = l.startYieldCheck(side)
				}
			case errors.Is(r.err, lock.ErrDuplicateOwner):
				reason = reasonLost
				l.duplicate(0, r.err)
			case errors.Is(r.err, lock.ErrNotHeld):
				reason = reasonLost
				log.Warn("leadership: the lease is gone; ending the term", zap.Error(r.err))
			case isFatal(r.err):
				reason, fatal = reasonFailed, r.err
			default:
				log.Warn("leadership: renewal failed; retrying", zap.Error(r.err))
				renewT.Reset(max(s.RenewEvery/4, time.Millisecond))
			}
		case y := <-yielded:
			yielded = nil
			switch {
			case y.err != nil:
				reason, fatal = reasonFailed, y.err
			case y.yield:
				reason = reasonYielded
			}
		}
	}
	cancelSide()
	res = l.endTerm(base, term, lease, cancelBody, body, res)
	if res == nil {
		kept = true
	} else if res.err != nil {
		switch {
		case isFatal(res.err), fault.IsPermanent(res.err): // retrying cannot fix it: stop campaigning
			fatal = errors.Join(fatal, res.err)
		case reason == reasonFailed:
			fields := []zap.Field{zap.Error(res.err)}
			if pe, ok := errors.AsType[*fault.PanicError](res.err); ok {
				fields = append(fields, zap.ByteString("stack", pe.Stack))
				safe.ReportPanic(context.WithoutCancel(spanCtx), l.reporter, l.conf.Name, res.err)
			}
			log.Error("leadership: lead failed; released, campaigning again after backoff", fields...)
		case !errors.Is(res.err, context.Canceled):
			log.Warn("leadership: lead returned an error as its term ended", zap.Error(res.err))
		}
	}
	l.term.CompareAndSwap(term, nil)
	l.m.held.WithLabelValues(s.Key).Set(0)
	l.m.ended.WithLabelValues(s.Key, reason).Inc()
	log.Info("leadership: term ended", zap.String("reason", reason))
	return reason, kept, fatal
}

// runBody runs Claim, then lead, and says how they ended the term.
func (l *Leadership) runBody(ctx context.Context, term *Term) bodyResult {
	s := &l.conf
	unclaimed := false
	err := safe.Call(fmt.Sprintf("leadership %q body", s.Key), func() error {
		if s.Claim != nil {
			ok, err := s.Claim(ctx, term)
			if err != nil {
				return fmt.Errorf("claim: %w", err)
			}
			if !ok {
				unclaimed = true
				return nil
			}
		}
		return l.lead(ctx, term)
	})
	switch {
	case err != nil:
		return bodyResult{reason: reasonFailed, err: err}
	case unclaimed:
		return bodyResult{reason: reasonUnclaimed}
	}
	return bodyResult{reason: reasonReleased}
}

// startRenew sends a renewal in a goroutine; its answer arrives on the channel. It is
// cut off at the term's soft deadline, past which it could no longer help.
func (l *Leadership) startRenew(ctx context.Context, lease lock.Lease, deadline time.Time) <-chan renewResult {
	ch := make(chan renewResult, 1)
	sent := time.Now()
	l.bg.Go(func() {
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		err := safe.Call("renew", func() error { return l.conf.Lock.Renew(ctx, lease) })
		ch <- renewResult{sent: sent, err: err}
	})
	return ch
}

func (l *Leadership) startYieldCheck(ctx context.Context) <-chan yieldResult {
	ch := make(chan yieldResult, 1)
	l.bg.Go(func() {
		y, err := l.shouldYield(ctx)
		ch <- yieldResult{yield: y, err: err}
	})
	return ch
}

// endTerm closes term.Ended, gives the body YieldGrace to return (none under Stop),
// then cancels it and gives it ReleaseTimeout more, then releases the lease. Renewals
// have stopped: the soft deadline guarantees all this fits before the lease could
// lapse. A body that has not returned by then keeps the lease until it lapses;
// endTerm then returns nil.
func (l *Leadership) endTerm(base context.Context, term *Term, lease lock.Lease, cancelBody context.CancelFunc, body <-chan bodyResult, res *bodyResult) *bodyResult {
	s := &l.conf
	term.end()
	if res == nil {
		res = awaitBody(body, s.YieldGrace, l.cut)
	}
	if res == nil {
		cancelBody()
		res = awaitBody(body, s.ReleaseTimeout, nil)
	}
	cancelBody()
	if res == nil {
		l.log.Error("leadership: lead did not return within ReleaseTimeout of its cancellation; leaving the lease to lapse at its TTL",
			zap.Uint64("token", lease.Token), zap.Duration("release_timeout", s.ReleaseTimeout))
		return nil
	}
	l.release(base, lease, "term")
	return res
}

// awaitBody waits up to d for the body's result, or until cut is closed.
func awaitBody(body <-chan bodyResult, d time.Duration, cut <-chan struct{}) *bodyResult {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-body:
		return &r
	case <-t.C:
	case <-cut:
	}
	return nil
}
