package host

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/internal/hookrun"
	"github.com/servicewright/servicewright/internal/prestop"
)

// PreStopFunc is Host.PreStop as the container sees it, so that an admin endpoint
// built there (a preStop httpGet target) can drain ahead of the stop.
type PreStopFunc func(ctx context.Context) error

// drainAhead is what PreStop runs before the stop, shared with the shutdown so that
// neither runs it twice.
type drainAhead struct {
	called atomic.Bool // PreStop was called: later calls do nothing

	mu    sync.Mutex
	began time.Time // when PreStop withdrew readiness of a serving service; zero if never

	// The drain hooks run once, by whichever of PreStop and the shutdown comes
	// first; the other waits on phasesDone (a channel, not a lock, so the wait is
	// one testing/synctest can see through).
	phasesBegun bool // guarded by mu
	phasesDone  chan struct{}
	phasesRep   hookrun.PhasesReport

	auth    *prestop.Token   // what prestop.Path asks of a caller (prestop_auth.go)
	metrics *prestop.Metrics // nil when they could not be registered

	// requested is when the first PreStop was accepted, zero if never. Guarded
	// by mu.
	requested time.Time
}

// PreStop drains the service ahead of its stop, for a Kubernetes preStop hook or an
// admin endpoint: the first two stages of the exit, on demand, with nothing stopped.
//
// Steps: readiness is withdrawn (the probe answers "draining"), the DrainDelay passes
// with every entrypoint still accepting so load balancers stop routing here, then the
// drain hooks run once, sharing DrainHooksBudget. PreStop returns when they are done
// and the entrypoints go on serving until the stop arrives (Kubernetes sends SIGTERM
// once preStop returns). The shutdown then skips what already ran: it waits only what
// is left of the DrainDelay, does not run the phases again, and goes on with Drain.
//
// When ctx is done during the delay PreStop returns ctx.Err() at once; readiness stays
// withdrawn and the shutdown waits out the rest of the delay. When ctx is done during
// the phases, the running phase is cancelled and the later ones are skipped; they do
// not run again at the shutdown.
//
// The budgets of the shutdown hold here too: a ForceCleanup, or the Deadline of a
// shutdown begun meanwhile, cuts PreStop's delay (PreStop returns the cause) and its
// phases (the running one is cancelled, abandoned 1 s later if it ignores that, and
// the later ones are skipped), exactly as they cut the shutdown's own.
//
// Only the first call does anything; later calls return nil at once. Before startup
// has finished, or once the shutdown has begun, PreStop only withdraws readiness: the
// phases run only after a complete startup, and a shutdown under way does the rest
// itself. It does not stop, drain or begin the shutdown of anything.
//
// Every call is logged with its caller. If no stop follows the first call within the
// termination grace period (TerminationGracePeriod, or 30s when it is
// not known), a warning is logged; servicewright_prestop_pending_seconds and the
// "prestop" field of /debug/lifecycle show it until a stop comes, so that an operator
// can find a replica left out of rotation. Nothing restores readiness but a restart.
func (h *Host) PreStop(ctx context.Context) error {
	return h.acceptPreStop(ctx, zap.String("caller", "in-process"))
}

// acceptPreStop is PreStop for a caller described by who.
func (h *Host) acceptPreStop(ctx context.Context, who ...zap.Field) error {
	first := h.ahead.called.CompareAndSwap(false, true)
	h.ahead.metrics.Accepted()
	h.log.Info("prestop: accepted", append(who, zap.Bool("first", first))...)
	if !first {
		return nil
	}
	h.watchPreStop()
	return h.preStop(ctx)
}

func (h *Host) preStop(ctx context.Context) error {
	serving := h.Stage() == StageServe
	h.withdraw()
	if !serving {
		h.log.Info("prestop: readiness withdrawn; the service is not serving, nothing else to run ahead",
			zap.Stringer("stage", h.Stage()))
		return nil
	}
	// ctx ends too with a ForceCleanup or the Deadline.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	force := h.shutdown.forcing()
	unlink := context.AfterFunc(force, func() { cancel(context.Cause(force)) })
	defer unlink()
	h.ahead.mu.Lock()
	h.ahead.began = time.Now()
	h.ahead.mu.Unlock()
	h.log.Info("prestop: readiness withdrawn; waiting the drain delay with every entrypoint accepting",
		zap.Duration("drain_delay", h.budgets.DrainDelay))
	t := time.NewTimer(h.budgets.DrainDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		if force.Err() != nil {
			h.log.Warn("prestop: drain delay cut short", zap.Error(context.Cause(ctx)))
			return context.Cause(ctx)
		}
		return ctx.Err()
	}
	rep := h.drainPhasesOnce(ctx, h.settledPhases())
	h.log.Info("prestop: done; still accepting until the stop", zap.Int("drain_hooks", len(rep.Phases)))
	return nil
}

// drainDelayLeft is what the shutdown still has to wait of the DrainDelay: all of it,
// unless PreStop began waiting it earlier.
func (h *Host) drainDelayLeft() time.Duration {
	h.ahead.mu.Lock()
	began := h.ahead.began
	h.ahead.mu.Unlock()
	if began.IsZero() {
		return h.budgets.DrainDelay
	}
	return max(h.budgets.DrainDelay-time.Since(began), 0)
}

// drainPhasesOnce runs the drain hooks registered so far, once per run: the first
// caller runs them under ctx, a concurrent one waits for it, and later ones get the
// first run's report.
func (h *Host) drainPhasesOnce(ctx context.Context, phases []hooks.DrainHook) hookrun.PhasesReport {
	a := &h.ahead
	a.mu.Lock()
	if a.phasesBegun {
		a.mu.Unlock()
		<-a.phasesDone
		return a.phasesRep
	}
	a.phasesBegun = true
	a.phasesDone = make(chan struct{})
	a.mu.Unlock()
	a.phasesRep = hookrun.DrainHooks(ctx, phases, h.budgets.DrainHooksBudget, h.log)
	close(a.phasesDone)
	return a.phasesRep
}

// settledPhases are the drain hooks of this run: those settled when startup reached
// pre_start (PreStop acts only on a serving service, so they are settled by then).
func (h *Host) settledPhases() []hooks.DrainHook {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.settled == nil {
		return nil
	}
	return h.settled.phases
}
