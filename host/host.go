package host

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
)

// Host runs one service through Bootstrap → Warmup → Ready → Serve → Drain → Cleanup.
// Create it with New; Run it once.
type Host struct {
	spec       AppSpec
	opts       options
	budgets    Budgets
	budgetVars budgetVars // the variables the budgets came from
	instance   string
	tel        *outputs
	log        *zap.Logger

	scope     Scope    // the container's; nil without one
	closers   []closer // OnClose's steps, in the order added (guarded by mu)
	regs      []Registration
	steps     []Step
	lifecycle *hooks.Registry // the container's; AppSpec.Lifecycle is read beside it
	checks    map[string]health.Check
	probe     *probeListener         // nil when disabled (probes.go)
	monitor   *health.Monitor        // readiness and checks: /readyz and other transports (monitor.go)
	monitored map[string]bool        // the names of the checks the Monitor was built with
	restarts  *prometheus.CounterVec // servicewright_entrypoint_restarts_total (restart.go)

	state    health.State // what startup reached; the shutdown handle overrides it
	shutdown *Shutdown
	ran      atomic.Bool
	stage    atomic.Int32
	entries  []*entry // one per registration, in bind order

	mu      sync.Mutex
	settled *lifecycle    // the run's hooks and phases, once startup reached pre_start
	logged  time.Duration // the worst case last logged
	ahead   drainAhead    // what PreStop ran ahead of the stop (prestop.go)
	pprof   pprofState    // the profiling endpoint's token and refusals (pprof.go)
}

// Option changes how a Host is built.
type Option func(*options)

type options struct {
	lookup   func(string) (string, bool)
	observer func(Event)
	exporter exportFunc     // nil: export nothing (WithExporter)
	signals  *signalHandler // Main's, for its metric; nil outside Main
}

// WithEnv replaces os.LookupEnv as the source of environment overrides (SW_*,
// TERMINATION_GRACE_PERIOD, INSTANCE_ID, SW_LOG_LEVEL). Tests use it.
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.lookup = lookup }
}

// WithObserver calls fn, synchronously, each time the Host enters a stage.
func WithObserver(fn func(Event)) Option {
	return func(o *options) { o.observer = fn }
}

// New validates spec and the environment and builds the container, starting
// nothing: no listener is opened and no OnStart hook runs. Every problem is reported
// at once in a *fault.ConfigError, which is also logged.
func New(spec AppSpec, opts ...Option) (*Host, error) {
	h := &Host{spec: spec, opts: options{lookup: os.LookupEnv}}
	for _, o := range opts {
		o(&h.opts)
	}
	h.instance = instanceID(&spec, h.opts.lookup)
	tel, err := newTelemetry(spec.Telemetry, spec.ServiceName, h.instance, h.opts.lookup, h.opts.exporter)
	if err != nil {
		var ce *fault.ConfigError
		if !errors.As(err, &ce) {
			ce = &fault.ConfigError{Problems: []fault.Problem{{Field: "Telemetry", Reason: err.Error()}}}
			// There is no logger to say it with: say it on stderr, as the logger would.
			// (A problem of the environment was logged by newTelemetry's own logger.)
			log := fallbackLogger(spec.ServiceName)
			log.Error("invalid configuration; nothing was started", zap.Error(ce))
			_ = log.Sync()
		}
		return nil, ce
	}
	h.tel, h.log = tel, tel.log
	if h.opts.signals != nil {
		_ = tel.reg.Register(h.opts.signals.collector()) // taken only by a user's own metric of that name
	}
	h.log = h.log.With(zap.String("instance", h.instance))

	if h.restarts, err = newRestartCounter(tel.reg); err != nil {
		return nil, err
	}
	var problems fault.Problems
	h.budgets, h.budgetVars = spec.Budgets.withEnv(h.opts.lookup, &problems)
	h.budgets = h.budgets.resolve(&problems)
	h.spec.Probes.CheckTimeout = checkTimeoutEnv(h.opts.lookup, spec.Probes.CheckTimeout, &problems)
	h.spec.CheckInterval = checkTiming(h.opts.lookup, &h.spec, &problems) // monitor.go
	h.shutdown = newShutdown(h.budgets.Deadline)
	h.configurePreStop(&problems) // prestop_auth.go: its token, its metrics
	h.configurePprof(&problems)   // pprof.go: the profiling token
	h.lifecycle = &hooks.Registry{}
	h.regs = slices.Clone(spec.Entrypoints)
	h.steps = slices.Clone(spec.Warmups)
	h.checks = make(map[string]health.Check, len(spec.Checks))
	for name, c := range spec.Checks {
		h.checks[name] = c
	}
	if spec.Container != nil {
		if err := h.buildContainer(&problems); err != nil {
			h.log.Error("startup failed", zap.Stringer("stage", StageCreated), zap.Error(err))
			tel.report(context.Background(), err, StageCreated, "")
			_ = tel.flush(context.Background())
			return nil, err
		}
	}
	validate(&h.spec, h.regs, h.steps, h.currentLifecycle(), h.checks, &problems)
	checkDrainTimes(h.regs, h.budgets.DrainGrace, h.budgetVars, &problems)
	if err := problems.Err(); err != nil {
		h.log.Error("invalid configuration; nothing was started", zap.Error(err))
		tel.report(context.Background(), err, StageCreated, "")
		_ = tel.flush(context.Background())
		return nil, err
	}
	if err := h.settleMonitor(); err != nil {
		h.log.Error("invalid configuration; nothing was started", zap.Error(err))
		_ = tel.flush(context.Background())
		return nil, err
	}
	if err := h.adopt(h.regs); err != nil {
		h.log.Error("invalid configuration; nothing was started", zap.Error(err))
		tel.report(context.Background(), err, StageCreated, "")
		_ = tel.flush(context.Background())
		return nil, err
	}
	if !spec.Probes.Disabled {
		h.probe = newProbeListener(h.spec.Probes, probeRoutes{
			readyz:    h.monitor,
			startupz:  health.Startup(readiness{h}),
			metrics:   promhttp.HandlerFor(tel.reg, promhttp.HandlerOpts{}),
			lifecycle: h.lifecycleHandler(),
			prestop:   h.preStopHandler(),
			pprof:     h.pprofHandler(),
		}, h.log.Named("probes"))
		for _, c := range h.probe.conns.collectors() {
			_ = tel.reg.Register(c) // taken only by a user's own metric of that name
		}
	}
	return h, nil
}

// Run is New followed by Host.Run. The caller owns signals: cancel ctx to stop.
func Run(ctx context.Context, spec AppSpec, opts ...Option) error {
	h, err := New(spec, opts...)
	if err != nil {
		return err
	}
	return h.Run(ctx)
}

// Shutdown returns the service's shutdown handle. It is also supplied to the container.
func (h *Host) Shutdown() *Shutdown { return h.shutdown }

// BeginDraining withdraws readiness without stopping anything: every entrypoint keeps
// accepting, so the load balancer can take the replica out of rotation before the
// stop arrives — call it from a Kubernetes preStop hook or an admin endpoint. It is
// the first stage of shutdown alone; the Host still waits the full DrainDelay after
// the stop, and it cannot be undone.
func (h *Host) BeginDraining() {
	h.withdraw()
	h.log.Info("readiness withdrawn; still accepting until the stop")
}

func (h *Host) withdraw() {
	h.state.Set(health.StatusDraining)
	h.tel.metrics.ready.Set(0)
}

// Readiness reports what the readiness probe answers from the Host's state alone:
// draining from the moment a stop is requested, whatever its source.
func (h *Host) Readiness() health.Status { return readiness{h}.Status() }

// readiness is the Host's readiness as the probe sees it: the stage startup reached,
// turned to draining by the stop signal itself, so no goroutine hop or callback
// stands between Begin and the probe's answer.
type readiness struct{ h *Host }

func (r readiness) Status() health.Status {
	if r.h.shutdown.stopping().Err() != nil {
		return health.StatusDraining
	}
	return r.h.state.Status()
}

// Started reports whether the service got past startup once, for the probes.
func (r readiness) Started() bool { return r.h.state.Started() }

// Stage reports the stage the Host is in.
func (h *Host) Stage() Stage { return Stage(h.stage.Load()) }

// Budgets returns the budgets in force: the spec's, with defaults filled in and
// environment overrides applied.
func (h *Host) Budgets() Budgets { return h.budgets }

// Instance returns this replica's identity.
func (h *Host) Instance() string { return h.instance }

// Logger returns the Host's logger.
func (h *Host) Logger() *zap.Logger { return h.log }

// ProbeAddr returns the probe listener's address once it is listening, or "".
func (h *Host) ProbeAddr() string {
	if h.probe == nil || h.probe.boundAddr() == nil {
		return ""
	}
	return h.probe.boundAddr().String()
}

// WorstCase sums, figure by figure, the longest orderly exit of this service, from
// the stop (or from PreStop): the drain delay followed by the wait for Serve to
// return, the drain hooks (each MaxDuration + 1 s, at most DrainHooksBudget + 1 s),
// one DrainGrace window plus 1 s shared by every Drain, then StepTimeout (plus the
// short grace before an abandonment) for each entrypoint's Stop, the wait for Serve,
// each shutdown hook, each warmup Stop, closing the container, flushing telemetry
// and closing the probe listener; with no drain hook, the 1 s a startup step cut
// short by the stop is waited for. Each figure is named after its stage; the
// worstCase function in worstcase.go says why each is what it is.
// Until startup reaches pre_start it counts the hooks and phases registered so far;
// from then on, those of the run, including what was registered during startup.
func (h *Host) WorstCase() WorstCase {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.worstCaseLocked()
}

func (h *Host) worstCaseLocked() WorstCase {
	lc := h.currentLifecycle()
	if h.settled != nil {
		lc = *h.settled
	}
	u := units{
		entrypoints:  len(h.regs),
		drainHooks:   len(lc.phases),
		hooksMax:     hooksMax(lc.phases),
		startSteps:   len(h.steps) + len(h.regs) + len(lc.hooks[hooks.PreStart]) + len(lc.hooks[hooks.PostStart]),
		preShutdown:  len(lc.hooks[hooks.PreShutdown]),
		postShutdown: len(lc.hooks[hooks.PostShutdown]),
		container:    h.scope != nil,
		closers:      len(h.closers),
		probes:       h.probe != nil,
		reporter:     h.tel.reporter != nil,
	}
	for _, s := range h.steps {
		if s.Stop != nil {
			u.warmupStops++
		}
	}
	return h.budgets.worstCase(u)
}

// logBudgets logs WorstCase figure by figure and warns when it cannot fit the
// orchestrator's grace period, or when a Kubernetes pod has no drain delay.
func (h *Host) logBudgets() {
	w := h.WorstCase()
	h.mu.Lock()
	h.logged = w.Total
	h.mu.Unlock()
	fields := []zap.Field{zap.Duration("worst_case", w.Total)}
	for _, f := range w.Figures {
		fields = append(fields, zap.Duration(f.Name, f.Value))
	}
	grace := h.budgets.TerminationGracePeriod
	if grace > 0 {
		fields = append(fields, zap.Duration("termination_grace_period", grace))
	}
	h.log.Info("shutdown budget", fields...)
	if grace > 0 && !w.Fits(grace) {
		h.log.Warn("the worst-case exit does not fit the termination grace period with 10% headroom: "+
			"the orchestrator may kill the process mid-drain; shrink the budgets or raise the grace period",
			zap.Duration("worst_case", w.Total), zap.Duration("termination_grace_period", grace),
			zap.String("figures", w.String()))
	}
	_, k8s := h.opts.lookup("KUBERNETES_SERVICE_HOST")
	if k8s && grace == 0 && !w.Fits(defaultK8sGrace) {
		h.log.Warn("running under Kubernetes without TERMINATION_GRACE_PERIOD, and the worst-case exit does not fit "+
			"Kubernetes' default grace period (30s) with 10% headroom: set terminationGracePeriodSeconds and "+
			"TERMINATION_GRACE_PERIOD to cover it, or shrink the budgets",
			zap.Duration("worst_case", w.Total), zap.Duration("default_grace", defaultK8sGrace),
			zap.String("figures", w.String()))
	}
	if k8s && h.budgets.DrainDelay == 0 && !h.onlyTasks() {
		h.log.Warn("running under Kubernetes with DrainDelay 0: endpoints are removed asynchronously, " +
			"so requests routed during the first seconds of a stop will be refused; set SW_DRAIN_DELAY " +
			"to the readiness probe's period x failureThreshold plus a few seconds")
	}
}
