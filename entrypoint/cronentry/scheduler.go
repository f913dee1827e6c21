package cronentry

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/wait"
)

var _ interface {
	entrypoint.Entrypoint
	entrypoint.InFlighter
	entrypoint.DrainReporter
	entrypoint.DefaultsUser
} = (*Scheduler)(nil)

// Scheduler runs jobs on cron expressions or fixed intervals as an entrypoint. Make
// one with New. Its methods are safe for concurrent use.
type Scheduler struct {
	jobs []*job
	log  *zap.Logger
	gate entrypoint.Gate // admits runs; Drain closes it and waits on it

	// afterWake, when set (by tests), runs in the scheduling goroutine each time it
	// wakes, before it reads the clock: sleeping there is a process that was paused.
	afterWake func()

	registered bool // the metrics are registered, with WithTelemetry's or the Host's registry

	tracer   trace.Tracer   // nil: runs make no span (report.go)
	reporter fault.Reporter // nil: failures are only logged

	base      entrypoint.Base    // the phase, under its lock with the fields below
	halted    bool               // quit is closed and the gate too
	quit      chan struct{}      // closed to end the scheduling goroutine
	loopDone  chan struct{}      // closed when the scheduling goroutine has returned
	cancel    context.CancelFunc // cancels every run's ctx
	active    map[uint64]activeRun
	nextRun   uint64
	drainSeen []activeRun // what was running when Drain began
	drained   bool
}

// activeRun is a run that has started and not yet ended.
type activeRun struct {
	id        uint64
	job       string
	scheduled time.Time
}

func (r activeRun) String() string {
	return fmt.Sprintf("%s@%s", r.job, r.scheduled.UTC().Format(time.RFC3339Nano))
}

// New returns a Scheduler that runs jobs. It validates cfg and every job and returns
// a *fault.ConfigError listing each problem with its field, e.g.
// `Jobs["report"].Schedule: invalid cron expression …`; given a registry
// (WithTelemetry) it also registers the metrics, and a registration that fails is a
// problem of the field WithTelemetry. It starts nothing and sends nothing to a
// fleet lock.
func New(cfg Config, jobs []Job, opts ...Option) (*Scheduler, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var l fault.Problems
	cfg = cfg.resolve(&l)
	compiled, err := compile(jobs, time.Now())
	l.Merge("", err)
	if err := l.Err(); err != nil {
		return nil, err
	}
	_ = newStats(nil, cfg.Name, compiled) // counts kept in memory; without a registry it cannot fail
	s := &Scheduler{jobs: compiled, active: map[uint64]activeRun{}}
	if err := s.base.Init(cfg.Name, o.tel, s.useTelemetry); err != nil {
		l.Addf("WithTelemetry", "%v", err)
		return nil, l.Err()
	}
	return s, nil
}

// SetDefaults takes the Host's telemetry for each field WithTelemetry left nil (see
// WithTelemetry for what each does). It returns a registration that fails (the
// Host refuses the entrypoint then), and does nothing once the Scheduler is bound.
func (s *Scheduler) SetDefaults(t entrypoint.Telemetry) error { return s.base.SetDefaults(t) }

// useTelemetry takes t, called by New with what the options gave and by
// SetDefaults with that merged with the Host's: a nil logger discards, a nil tracer
// provider makes no span, and the metrics are registered once, with the first
// registry given.
func (s *Scheduler) useTelemetry(t entrypoint.Telemetry) error {
	log := t.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s.log = log.With(zap.String("entrypoint", s.base.Name()))
	s.useTracerProvider(t.TracerProvider)
	s.reporter = t.Reporter
	if !s.registered && t.Registerer != nil {
		if err := newStats(t.Registerer, s.base.Name(), s.jobs); err != nil {
			return fmt.Errorf("cronentry %q: %w", s.base.Name(), err)
		}
		s.registered = true
	}
	return nil
}

// Name returns Config.Name.
func (s *Scheduler) Name() string { return s.base.Name() }

// Bind readies the schedules, which New has already parsed and checked; no tick is
// taken before Serve. It returns an error wrapping entrypoint.ErrOutOfTurn when
// called twice or after Drain or Stop.
func (s *Scheduler) Bind(context.Context) error {
	s.base.Lock()
	defer s.base.Unlock()
	if err := s.base.Bind(); err != nil {
		return err
	}
	s.base.Bound()
	return nil
}

// Serve starts the scheduling goroutine, which the Scheduler owns, and returns nil
// once stop is closed — with the schedule STILL running: ticks keep firing through
// the drain delay, until Drain. Each job's first tick is the first one after Serve
// is called. Runs get a ctx carrying ctx's values but not its cancellation; Stop
// cancels it. Serve never fails on its own: a run's failure or panic is the run's,
// logged and counted, and the next tick runs, as does a once-per-fleet backend that
// does not answer (the tick is skipped). There is thus nothing for the Host to
// restart, even on a NonEssential registration.
//
// If ctx is done before stop, the Host has given up on the entrypoint: Serve ends
// the schedule, cancels the runs' ctx, waits for the scheduling goroutine at most
// hooks.AbandonAfter and returns ctx.Err() (joined with an error wrapping
// fault.ErrAbandoned when it did not exit in time); Stop still waits for the runs. Serve returns an error when
// called before Bind or twice (wrapping entrypoint.ErrOutOfTurn). It starts
// nothing, and returns nil, after Drain or Stop; if Drain or Stop comes while it
// waits for stop, it returns nil then.
func (s *Scheduler) Serve(ctx context.Context, stop <-chan struct{}) error {
	s.base.Lock()
	if start, err := s.base.Serve(); !start {
		s.base.Unlock()
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.quit, s.loopDone, s.cancel = make(chan struct{}), make(chan struct{}), cancel
	quit, done := s.quit, s.loopDone
	go s.loop(runCtx, quit, done)
	s.base.Unlock()
	s.log.Info("cron schedule started", zap.Int("jobs", len(s.jobs)))

	return wait.ServeUntil(ctx, fmt.Sprintf("cronentry %q", s.base.Name()), stop, done, func() <-chan struct{} { s.halt(true); return done })
}

// Drain takes no new tick and waits for the runs in progress: first it ends the
// schedule and refuses every later tick — a tick waiting behind a run
// (OverlapQueue) is dropped and counted skipped_draining — then it waits until every
// run has returned, and returns nil. It does not cancel the runs' ctx; Stop does.
//
// If ctx is done first, Drain returns an error wrapping ctx.Err() that names the
// jobs still running, and leaves them to Stop. DrainReport tells which jobs were
// running, which finished and which still run. Without Serve, or after Drain or
// Stop, it returns nil at once. A drained Scheduler cannot be served again.
func (s *Scheduler) Drain(ctx context.Context) error {
	s.base.Lock()
	turn := s.base.Drain()
	if turn == entrypoint.Idle { // before Bind, or drained or stopped already
		s.base.Unlock()
		return nil
	}
	s.drained = true
	s.haltLocked(false)
	s.drainSeen = s.activeLocked()
	seen, done := s.drainSeen, s.loopDone
	s.base.Unlock()
	if turn == entrypoint.Unserved { // bound, never served: no run to wait for
		return nil
	}
	s.log.Info("cron draining", zap.Stringers("running", seen))

	if err := s.await(ctx, done); err != nil {
		left := s.running()
		s.log.Warn("cron drain ran out of time; Stop will cancel the runs left", zap.Stringers("still_running", left))
		return fmt.Errorf("cronentry %q: drain: jobs still running: %s: %w", s.base.Name(), names(left), err)
	}
	return nil
}

// Stop ends the schedule, cancels every run's ctx, and waits for the runs to
// return; then it returns nil. If ctx is done first, the runs that ignore their ctx
// are abandoned, still running, and Stop returns an error wrapping ctx.Err() that
// names them. It does not release once-per-fleet leases; they lapse at their TTL.
// Without Serve it returns nil; before Bind, or after a first Stop, it does
// nothing and returns nil at once (a run the first Stop abandoned stays abandoned).
func (s *Scheduler) Stop(ctx context.Context) error {
	s.base.Lock()
	turn := s.base.Stop()
	if turn == entrypoint.Idle { // before Bind, or stopped already
		s.base.Unlock()
		return nil
	}
	s.haltLocked(true)
	done := s.loopDone
	s.base.Unlock()
	if turn == entrypoint.Unserved { // bound, never served: no run to wait for
		return nil
	}

	if err := s.await(ctx, done); err != nil {
		left := s.running()
		s.log.Error("cron runs abandoned: they ignored their cancelled ctx", zap.Stringers("abandoned", left))
		return fmt.Errorf("cronentry %q: stop: abandoned jobs still running: %s: %w", s.base.Name(), names(left), err)
	}
	return nil
}

// halt ends the schedule and, when cut is set, cancels the runs.
func (s *Scheduler) halt(cut bool) {
	s.base.Lock()
	defer s.base.Unlock()
	s.haltLocked(cut)
}

// haltLocked closes quit and the gate once, drops the queued ticks and, when cut is
// set, cancels the runs' ctx. Called with the base's lock held.
func (s *Scheduler) haltLocked(cut bool) {
	if !s.halted {
		s.halted = true
		if s.quit != nil {
			close(s.quit)
		}
		s.gate.Close()
		for _, j := range s.jobs {
			if t := j.queued; t != nil {
				j.queued = nil
				s.record(j, skippedDraining)
			}
		}
	}
	if cut && s.cancel != nil {
		s.cancel()
	}
}

// await waits for the scheduling goroutine (when there is one) and then for every
// run, or until ctx is done.
func (s *Scheduler) await(ctx context.Context, loopDone <-chan struct{}) error {
	if err := wait.Await(ctx, loopDone); err != nil {
		return err
	}
	return s.gate.Wait(ctx)
}

// InFlight reports how many runs are in progress, a once-per-fleet lock attempt
// included.
func (s *Scheduler) InFlight() int { return s.gate.InFlight() }

// DrainReport says what Drain found and left, for the Host's shutdown report:
// "running=2 [report@… sweep@…] finished=1 [report@…] still_running=1 [sweep@…]",
// each run named job@tick. Before Drain it is "not drained".
func (s *Scheduler) DrainReport() string {
	s.base.Lock()
	defer s.base.Unlock()
	if !s.drained {
		return "not drained"
	}
	// No run starts after Drain began, so what runs now is what Drain left.
	left := s.activeLocked()
	var finished []activeRun
	for _, r := range s.drainSeen {
		if _, running := s.active[r.id]; !running {
			finished = append(finished, r)
		}
	}
	list := func(rs []activeRun) string {
		if len(rs) == 0 {
			return "0"
		}
		return fmt.Sprintf("%d [%s]", len(rs), strings.Join(shortNames(rs), " "))
	}
	return fmt.Sprintf("running=%s finished=%s still_running=%s",
		list(s.drainSeen), list(finished), list(left))
}

// running returns the runs in progress, oldest first.
func (s *Scheduler) running() []activeRun {
	s.base.Lock()
	defer s.base.Unlock()
	return s.activeLocked()
}

// activeLocked returns the runs in progress, oldest first. Called with the base's lock held.
func (s *Scheduler) activeLocked() []activeRun {
	rs := make([]activeRun, 0, len(s.active))
	for _, r := range s.active {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b activeRun) int { return cmp.Compare(a.id, b.id) })
	return rs
}

// names lists runs as "report@2026-03-01T09:30:00Z, sweep@…" for an error.
func names(rs []activeRun) string { return strings.Join(shortNames(rs), ", ") }

func shortNames(rs []activeRun) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}
