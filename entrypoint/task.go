package entrypoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/internal/wait"
)

// defaultPermanentExitCode is the exit code of a service whose task failed with an
// error marked by fault.Permanent, when TaskConfig.PermanentExitCode is 0. A Job's
// podFailurePolicy names it in a FailJob rule; users read it as host.ExitPermanent,
// which host's tests hold equal to it.
const defaultPermanentExitCode = 3

// reservedExitCodes are the codes a task's permanent code must not take: success, the
// retriable failure, EX_TEMPFAIL (interrupted) and EX_CONFIG.
var reservedExitCodes = map[int]string{
	0:  "success",
	1:  "a retriable failure",
	75: "an interrupted run",
	78: "invalid configuration",
}

// Finite is implemented by an entrypoint whose work ends: a task. The Host treats its
// Serve returning nil before the stop as "done" rather than as a failure, ends the
// service in order once every Finite entrypoint is done, and, when the service ends
// with one of them not Finished, returns an error wrapping fault.ErrInterrupted.
type Finite interface {
	Entrypoint
	// Finished reports whether the work ran to completion: it returned nil before
	// any stop reached it. It never turns back to false.
	Finished() bool
}

var _ interface {
	Finite
	InFlighter
	DefaultsUser
} = (*Task)(nil)

// TaskConfig configures a Task.
type TaskConfig struct {
	// Name names the task in logs, the shutdown report and errors. Required.
	Name string
	// PermanentExitCode is the process exit code when the work fails with an error
	// marked by fault.Permanent. 0 means 3 (host.ExitPermanent). It must be
	// from 2 to 127 and must not be 75 or 78, which mean other things.
	PermanentExitCode int
}

// TaskError is how a task's failure reaches the Host, wrapped in the Host's
// entrypoint error. ExitCode is what the process exits with.
type TaskError struct {
	Task string
	Err  error
	Code int // PermanentExitCode when fault.IsPermanent(Err), 1 otherwise
}

func (e *TaskError) Error() string { return fmt.Sprintf("task %q: %v", e.Task, e.Err) }

func (e *TaskError) Unwrap() error { return e.Err }

// ExitCode is the process exit code this failure calls for.
func (e *TaskError) ExitCode() int { return e.Code }

// Task is work that runs once: a migration, a backfill, a re-index, a report. It is an
// entrypoint, so it runs through the same Host as a server — telemetry, container,
// warmups, hooks, budgets — and beside any other entrypoint (the probe listener, a
// small admin HTTP server), which keeps serving until the task ends. Make one with
// NewTask.
//
// The sequence:
//
//  1. Bind does nothing; the work starts in Serve, after every entrypoint is bound and
//     readiness has turned true, like any entrypoint's.
//  2. Serve runs the work and returns when it returns. Done (nil): Serve returns nil,
//     and the Host runs the orderly exit — drain of the other entrypoints, hooks,
//     container close, telemetry flush, a report with result success — and the
//     process exits 0. Failed: Serve returns a *TaskError and the service exits 1,
//     or PermanentExitCode when the error is marked by fault.Permanent. A panic in
//     the work is a failure naming the task (a *fault.PanicError inside).
//  3. A stop (a signal, the caller's ctx, Shutdown.Begin) before the work is done
//     cancels the work's ctx with cause fault.ErrInterrupted and Serve returns nil at
//     once. The work should stop at its next unit boundary: Checkpoint returns the
//     cause between units. Drain waits, within its window, for the work to return;
//     Stop waits again within its own. Whatever the work returns after the stop, the
//     run counts as interrupted: Finished stays false, and the Host reports
//     "interrupted" and exits with a non-zero, retriable code (75, EX_TEMPFAIL).
//
// A task cannot be resumed in-process: a rerun starts the work again, so each unit
// must be idempotent (an upsert, ON CONFLICT DO NOTHING, a checkpoint row) for the
// rerun to complete the rest. A task is always essential: its failure ends the
// service whatever its Registration says. It takes no traffic and has nothing to
// refuse; its in-flight count (InFlight) is its work, 1 while it runs, so a drain
// that finds it mid-unit says so in the shutdown report. A stop that reaches the
// work is always logged, once the work returns, with what it returned: the unit's
// error when the stop cut a unit, the cause when the work stopped at a checkpoint.
type Task struct {
	name string
	code int
	work func(ctx context.Context) error

	base        Base                    // the phase, under its lock with the fields below
	returned    bool                    // the work returned
	finished    bool                    // the work returned nil before any stop
	interrupted bool                    // a stop arrived before the work returned
	accounted   bool                    // Drain or Stop saw the interrupted work return
	err         error                   // the work's error, if it returned one
	cancel      context.CancelCauseFunc // set by Serve when the work starts
	done        chan struct{}           // closed when the work has returned
	log         *zap.Logger
	reporter    fault.Reporter // nil: panics after a stop are only logged
}

// NewTask returns a Task that runs work once. WithTelemetry gives it the logger for
// the line that says how a stop ended the work, and the error reporter for a panic of
// the work that Serve does not return because a stop came first (a panic Serve
// returns is the Host's to report, as the entrypoint's failure). It returns a *fault.ConfigError naming
// each bad field: an empty Name, a nil work, a PermanentExitCode outside 2–127 or equal
// to 75 or 78. It starts nothing.
func NewTask(cfg TaskConfig, work func(ctx context.Context) error, opts ...Option) (*Task, error) {
	var l fault.Problems
	if cfg.Name == "" {
		l.Addf("Name", "must not be empty")
	}
	if work == nil {
		l.Addf("work", "must not be nil")
	}
	code := cfg.PermanentExitCode
	code = cmp.Or(code, defaultPermanentExitCode)
	if why, ok := reservedExitCodes[code]; ok {
		l.Addf("PermanentExitCode", "%d already means %s", code, why)
	} else if code < 2 || code > 127 {
		l.Addf("PermanentExitCode", "must be from 2 to 127 (128 and above mean a signal), got %d", code)
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	t := &Task{name: cfg.Name, code: code, work: work, done: make(chan struct{})}
	_ = t.base.Init(cfg.Name, newOptions(opts).given, t.use) // use never fails
	return t, nil
}

// SetDefaults takes the Host's logger and error reporter for those WithTelemetry
// left nil. It does nothing once the Task is bound, and never fails.
func (t *Task) SetDefaults(d Telemetry) error { return t.base.SetDefaults(d) }

// use takes the logger and the error reporter of d; the Base calls it with what
// WithTelemetry gave, and again from SetDefaults merged with the Host's.
func (t *Task) use(d Telemetry) error {
	t.log = cmp.Or(d.Logger, zap.NewNop())
	t.reporter = d.Reporter
	return nil
}

// InFlight reports 1 while the work runs (started and not returned), and while a
// unit the stop interrupted has not been accounted for by Drain or Stop, even when the
// cut unit returned at once: the drain's report counts it. 0 otherwise.
func (t *Task) InFlight() int {
	t.base.Lock()
	defer t.base.Unlock()
	if t.cancel != nil && (!t.returned || (t.interrupted && !t.accounted)) {
		return 1
	}
	return 0
}

// Name returns the task's name.
func (t *Task) Name() string { return t.base.Name() }

// PermanentExitCode returns the exit code of a permanent failure.
func (t *Task) PermanentExitCode() int { return t.code }

// Bind holds nothing, since a task holds nothing before it runs; it refuses a second
// call with an error wrapping ErrOutOfTurn.
func (t *Task) Bind(context.Context) error {
	t.base.Lock()
	defer t.base.Unlock()
	if err := t.base.Bind(); err != nil {
		return err
	}
	t.base.Bound()
	return nil
}

// Serve runs the work. It returns nil when the work is done, a *TaskError when it
// failed, and nil at once when stop closes first (having cancelled the work's ctx
// with cause fault.ErrInterrupted). ctx is the Host's: when it is cancelled, the Host
// has given up, and Serve cancels the work the same way and returns ctx.Err(); Drain
// and Stop wait for the work. Serve before Bind, or twice, returns an error wrapping
// ErrOutOfTurn; after Drain or Stop it runs nothing and returns nil.
//
// A Task runs once: it is never served again, and the Host never restarts it. Done,
// there is nothing left to run; failed, its failure ends the service whatever its
// registration says, and the exit code tells the Job's controller whether to run
// the pod again (backoffLimit) or give up (a permanent failure).
func (t *Task) Serve(ctx context.Context, stop <-chan struct{}) error {
	t.base.Lock()
	if start, err := t.base.Serve(); !start {
		t.base.Unlock()
		return err
	}
	wctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	t.cancel = cancel
	t.base.Unlock()

	go t.run(wctx)
	select {
	case <-t.done:
		t.base.Lock()
		defer t.base.Unlock()
		if t.finished {
			return nil
		}
		if t.interrupted { // stop and return raced; the stop wins
			return nil
		}
		return t.failure()
	case <-stop:
		t.interrupt()
		t.reportUnreturned()
		return nil
	case <-ctx.Done():
		t.interrupt()
		t.reportUnreturned()
		return ctx.Err()
	}
}

// reportUnreturned reports the work's panic when the work returned it before the stop
// that makes Serve return without it. (Once the stop reached the work, run reports.)
func (t *Task) reportUnreturned() {
	t.base.Lock()
	err, lost := t.err, t.returned && !t.interrupted
	t.base.Unlock()
	if lost {
		safe.ReportPanic(context.Background(), t.reporter, t.name, err)
	}
}

// run calls the work and records how it ended. When a stop reached the work, it
// logs the stop with what the work returned, before Drain or Stop can see it done.
func (t *Task) run(ctx context.Context) {
	err := safe.Call(fmt.Sprintf("task %q", t.name), func() error { return t.work(ctx) })
	t.base.Lock()
	t.returned = true
	t.err = err
	t.finished = err == nil && !t.interrupted
	interrupted, log := t.interrupted, t.log
	t.base.Unlock()
	if interrupted { // Serve has returned nil: the panic, if any, is reported here
		safe.ReportPanic(context.WithoutCancel(ctx), t.reporter, t.name, err)
		how := "its work returned nil after the stop"
		switch {
		case errors.Is(err, fault.ErrInterrupted):
			how = "its work stopped at a unit boundary"
		case err != nil:
			how = "the stop cut a unit; its error follows"
		}
		log.Warn("task stopped before its work was done; the run counts as interrupted",
			zap.String("task", t.name), zap.String("how", how), zap.Error(err))
	}
	close(t.done)
}

func (t *Task) failure() error {
	code := 1
	if fault.IsPermanent(t.err) {
		code = t.code
	}
	return &TaskError{Task: t.name, Err: t.err, Code: code}
}

// interrupt cancels the work with cause fault.ErrInterrupted unless it has returned.
func (t *Task) interrupt() {
	t.base.Lock()
	defer t.base.Unlock()
	if t.returned || t.cancel == nil {
		return
	}
	t.interrupted = true
	t.cancel(fault.ErrInterrupted)
}

// Drain asks the work to stop, as the stop already did, and waits for it to return
// until ctx's deadline; on expiry it returns ctx.Err() and leaves the work to Stop.
func (t *Task) Drain(ctx context.Context) error {
	if !t.halt(false) {
		return nil
	}
	t.interrupt()
	err := wait.Await(ctx, t.done)
	t.account(err)
	return err
}

// account records that Drain or Stop saw the work return (err nil): from then on its
// interrupted unit is no longer in flight.
func (t *Task) account(err error) {
	if err == nil {
		t.base.Lock()
		t.accounted = true
		t.base.Unlock()
	}
}

// Stop waits for the work to return until ctx's deadline. It cannot cut off work that
// ignores its ctx: that goroutine is left behind, Stop logs that it was, and returns
// ctx.Err().
func (t *Task) Stop(ctx context.Context) error {
	if !t.halt(true) {
		return nil
	}
	t.interrupt()
	err := wait.Await(ctx, t.done)
	t.account(err)
	if err != nil {
		t.base.Lock()
		log := t.log
		t.base.Unlock()
		log.Error("task stopped with its work still running; it is abandoned mid-unit",
			zap.String("task", t.name), zap.Error(err))
	}
	return err
}

// halt moves the phase to stopped (stop) or draining and reports whether there is
// work to wait for: Serve started it, and this is the first Drain or Stop (or a Stop
// after Drain).
func (t *Task) halt(stop bool) (started bool) {
	t.base.Lock()
	defer t.base.Unlock()
	var turn Turn
	if stop {
		turn = t.base.Stop()
	} else {
		turn = t.base.Drain()
	}
	return turn == Served && t.cancel != nil
}

// Finished reports whether the work returned nil before any stop reached it.
func (t *Task) Finished() bool {
	t.base.Lock()
	defer t.base.Unlock()
	return t.finished
}

// Err returns the work's error once it has returned one, or nil.
func (t *Task) Err() error {
	t.base.Lock()
	defer t.base.Unlock()
	return t.err
}

// Checkpoint is what a task's work calls between units: it returns nil while the work
// may go on, and the ctx's cause — fault.ErrInterrupted after a stop — once it must
// return. Each unit committed before the checkpoint stays done, so a rerun skips it.
func Checkpoint(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}
