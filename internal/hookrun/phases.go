package hookrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/servicewright/servicewright/hooks"
	"go.uber.org/zap"
)

// minPhaseTime is the least time worth starting a phase with; a phase that would get
// less is skipped (the hooks package's doc states it).
const minPhaseTime = 100 * time.Millisecond

// ErrBudgetSpent is the report's error for a phase skipped because less than
// minPhaseTime was left.
var ErrBudgetSpent = errors.New("drain hook skipped: budget spent")

// Outcome is what became of one drain hook.
type Outcome int

const (
	// Skipped: not run, because too little budget was left or the parent ctx was done.
	// It is the zero value.
	Skipped Outcome = iota
	// Completed: returned nil before its deadline.
	Completed
	// Failed: returned an error, or panicked, before its deadline.
	Failed
	// Overran: its window ran out, it was cancelled, and it returned within
	// hooks.AbandonAfter.
	Overran
	// Interrupted: the parent ctx was cancelled while it ran, and it returned within
	// hooks.AbandonAfter.
	Interrupted
	// Abandoned: it did not return within hooks.AbandonAfter of its ctx being done; its
	// goroutine was left to finish on its own.
	Abandoned
)

// String returns "skipped", "completed", "failed", "overran", "interrupted" or
// "abandoned".
func (o Outcome) String() string {
	switch o {
	case Skipped:
		return "skipped"
	case Completed:
		return "completed"
	case Failed:
		return "failed"
	case Overran:
		return "overran"
	case Interrupted:
		return "interrupted"
	case Abandoned:
		return "abandoned"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// PhaseResult is one phase's line in a PhasesReport.
type PhaseResult struct {
	Name    string
	Outcome Outcome
	// Allowed is the time the phase was given (0 when skipped).
	Allowed time.Duration
	// Duration is how long DrainHooks spent on it, up to its return or its
	// abandonment (0 when skipped).
	Duration time.Duration
	// Err is nil for Completed. Otherwise: Failed — the phase's error or a
	// *fault.PanicError; Overran — the phase's error, or hooks.ErrDrainHookDeadline if it
	// returned nil; Interrupted — the phase's error, or the parent ctx's cause;
	// Abandoned — an error wrapping fault.ErrAbandoned; Skipped — ErrBudgetSpent or the
	// parent ctx's cause.
	Err error
}

// PhasesReport is what DrainHooks did, one entry per phase in the order given.
type PhasesReport struct {
	Phases   []PhaseResult
	Duration time.Duration // from start to return, abandon waits included
}

// DrainHooks runs phases one after the other, in the order given (pass
// hooks.Registry.DrainHooks, sorted by Order), sharing budget, and reports what became of
// each. A phase that fails does not stop the next.
//
// The time left is budget minus the time elapsed since DrainHooks started, read
// from the clock, so an abandoned phase's extra wait counts against it too. Each phase
// is given allowed = min(MaxDuration, left) — all that is left when MaxDuration is 0 —
// further shortened to ctx's own deadline if that comes sooner; it is called with that
// figure and its ctx has exactly that deadline. A phase that would be given less than
// minPhaseTime is skipped.
//
// When a phase's window runs out its ctx is cancelled with cause hooks.ErrDrainHookDeadline; if
// it returns within hooks.AbandonAfter it is reported Overran, otherwise Abandoned — its
// goroutine is left running, its eventual result is discarded — and the next phase
// runs with what is left. A panic is recovered and reported as Failed.
//
// When ctx is done (forced cleanup, the overall deadline) the running phase's ctx is
// cancelled with it, it gets hooks.AbandonAfter to return (Interrupted) or is Abandoned, and
// every later phase is Skipped. So DrainHooks returns within budget, plus
// hooks.AbandonAfter when the last phase it ran ignored its cancellation.
//
// Every outcome is logged with the phase's name. DrainHooks neither sorts nor
// validates phases, and it does not remember having run: running phases at most once
// is the caller's job. A nil log is allowed.
func DrainHooks(ctx context.Context, phases []hooks.DrainHook, budget time.Duration, log *zap.Logger) PhasesReport {
	log = orNop(log)
	start := time.Now()
	rep := PhasesReport{Phases: make([]PhaseResult, 0, len(phases))}
	for _, p := range phases {
		res := runPhase(ctx, p, budget-time.Since(start))
		logPhase(log, res)
		rep.Phases = append(rep.Phases, res)
	}
	rep.Duration = time.Since(start)
	return rep
}

func runPhase(ctx context.Context, p hooks.DrainHook, left time.Duration) PhaseResult {
	res := PhaseResult{Name: p.Name}
	if ctx.Err() != nil {
		res.Err = context.Cause(ctx)
		return res
	}
	allowed := left
	if p.MaxDuration > 0 && p.MaxDuration < allowed {
		allowed = p.MaxDuration
	}
	now := time.Now()
	// When the parent ends first (or together), tell the phase the truth, and let its
	// ending count as an interruption rather than an overrun.
	parentFirst := false
	if d, ok := ctx.Deadline(); ok && !d.After(now.Add(allowed)) {
		allowed, parentFirst = d.Sub(now), true
	}
	if allowed < minPhaseTime {
		res.Err = ErrBudgetSpent
		return res
	}
	var pctx context.Context
	var cancel context.CancelFunc
	if parentFirst {
		pctx, cancel = context.WithCancel(ctx)
	} else {
		pctx, cancel = context.WithTimeoutCause(ctx, allowed, hooks.ErrDrainHookDeadline)
	}
	defer cancel()

	res.Allowed = allowed
	what := fmt.Sprintf("drain hook %q", p.Name)
	f, err := bounded(pctx, what, hooks.AbandonAfter, func(ctx context.Context) error {
		return p.Run(ctx, allowed)
	})
	res.Duration = time.Since(now)
	res.Err = err
	switch {
	case f == nil && isPanic(err): // before its ctx was done, or while unwinding
		res.Outcome = Failed
	case f == nil:
		res.Outcome = Abandoned
	case f.cause == nil && err == nil:
		res.Outcome = Completed
	case f.cause == nil:
		res.Outcome = Failed
	case errors.Is(f.cause, hooks.ErrDrainHookDeadline):
		res.Outcome = Overran
		if err == nil {
			res.Err = hooks.ErrDrainHookDeadline
		}
	default:
		res.Outcome = Interrupted
		if err == nil {
			res.Err = f.cause
		}
	}
	return res
}

func logPhase(log *zap.Logger, r PhaseResult) {
	fields := []zap.Field{zap.String("phase", r.Name), zap.Stringer("outcome", r.Outcome),
		zap.Duration("allowed", r.Allowed), zap.Duration("took", r.Duration)}
	if r.Err != nil {
		fields = append(fields, zap.Error(r.Err))
	}
	switch r.Outcome {
	case Completed:
		log.Info("drain hook completed", fields...)
	case Skipped:
		log.Warn("drain hook skipped", fields...)
	case Overran:
		log.Warn("drain hook overran its window and was cancelled", fields...)
	case Interrupted:
		log.Warn("drain hook interrupted", fields...)
	case Abandoned:
		log.Error("drain hook ignored its cancellation and was abandoned", fields...)
	default:
		log.Error("drain hook failed", fields...)
	}
}
