package health

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
)

// Defaults for the zero fields of MonitorConfig.
const (
	defaultCheckInterval = 5 * time.Second
	defaultPollInterval  = 20 * time.Millisecond
)

// Notifier is a Source that tells when its Status may have changed: Changed returns a
// channel closed at the next change. *State is one. A Monitor follows a Notifier at
// once and polls any other Source every PollInterval.
type Notifier interface {
	Changed() <-chan struct{}
}

var _ Notifier = (*State)(nil)

// MonitorConfig configures NewMonitor. Every zero field takes the default named after
// it.
type MonitorConfig struct {
	// Checks are the dependencies the process cannot serve without, by name, as in
	// ReadinessConfig: give both the same map and they give the same answers.
	Checks map[string]Check
	// CheckTimeout is each check's own budget: a check that has not answered by then
	// is failing, "timed out after …". 0 means 2s; negative is refused, and so is a
	// timeout not shorter than CheckInterval.
	CheckTimeout time.Duration
	// CheckInterval is how often a started Monitor runs each check in the
	// background (and a subscription of one not started runs them again while the
	// Source is Ready). Default 5s. A check may have its own (Every).
	CheckInterval time.Duration
	// PollInterval is how often a subscription reads a Source that is not a
	// Notifier. Default 20ms.
	PollInterval time.Duration
	// Logger receives check failures, panics and timeouts. nil logs nothing.
	Logger *zap.Logger
	// Registerer, when set, receives the gauge servicewright_readiness_check_failing
	// {check, gates}, set at each evaluation (see ReadinessConfig.Registerer). nil
	// registers nothing.
	Registerer prometheus.Registerer
}

// A Monitor gives readiness to a transport other than HTTP — the gRPC health
// service, a service registry — with the same answers as the readiness probe:
// Evaluate answers once, Subscribe follows the changes, and ServeHTTP is the probe
// itself. Make one with NewMonitor; it is safe for concurrent use.
//
// Started (Start), it runs each check in the background, one run at a time, every
// CheckInterval (or the check's own, Every), and every answer — ServeHTTP, Evaluate,
// Subscribe — is read from the last results and their age: it never waits on a
// dependency, and the number of probes never changes the load on one. Before Start
// each answer runs the checks itself, as NewReadiness's handler does.
type Monitor struct {
	e    *evaluator
	cfg  MonitorConfig
	note Notifier // nil when the Source is not one
}

// NewMonitor returns a Monitor of src and cfg.Checks. Like NewReadiness, it takes
// its configuration first and the Source second. Invalid arguments (a nil src, a nil
// or badly named check, a negative duration, a Registerer that refuses the gauge)
// return a *fault.ConfigError listing each problem by field.
func NewMonitor(cfg MonitorConfig, src Source) (*Monitor, error) {
	var l fault.Problems
	validateSource(&l, src)
	cfg = cfg.resolve(&l)
	if err := l.Err(); err != nil {
		return nil, err
	}
	failing, err := newFailingGauge(cfg.Registerer)
	if err != nil {
		l.Addf("Registerer", "%v", err)
		return nil, l.Err()
	}
	m := &Monitor{e: newEvaluator(src, cfg.Checks, cfg.CheckTimeout, cfg.CheckInterval, cfg.Logger), cfg: cfg}
	m.e.failing = failing
	if n, ok := src.(Notifier); ok {
		m.note = n
	}
	return m, nil
}

// resolve fills c's defaults and records each problem in l under its field.
func (c MonitorConfig) resolve(l *fault.Problems) MonitorConfig {
	c.CheckTimeout, c.CheckInterval = validateTiming(l, c.CheckTimeout, c.CheckInterval)
	validateChecks(l, c.Checks, c.CheckTimeout, c.CheckInterval)
	switch {
	case c.PollInterval < 0:
		l.Addf("PollInterval", "must not be negative, got %s", c.PollInterval)
	case c.PollInterval == 0:
		c.PollInterval = defaultPollInterval
	}
	return c
}

// AddCheck adds the check c under name to those the Monitor runs, as if it had been
// in MonitorConfig.Checks: the next evaluation, and the next run of every
// subscription, runs it; an evaluation under way keeps the checks it began with. On
// a started Monitor its background runs begin at once, and until its first answer
// its entry is failing, "pending". An
// empty name, one with a comma or surrounding spaces, a nil c, or a name already in
// use is a *fault.ConfigError naming Checks[name], and nothing is added. It is safe
// to call concurrently with Evaluate and Subscribe.
func (m *Monitor) AddCheck(name string, c Check) error { return m.e.add(name, c) }

// ServeHTTP answers the readiness probe (/readyz) from the Monitor, exactly as the
// handler of NewReadiness does with the same checks (the status codes, the body,
// ?exclude=): a probe and Evaluate give the same answer because they share the
// checks, and a check added with AddCheck is run by both.
func (m *Monitor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	readiness{m.e}.ServeHTTP(w, r)
}

// Serving reports whether r lets the process take work: Status is AnswerOK, or
// AnswerDegraded (a check that does not gate traffic failed; see Gating).
func (r Answer) Serving() bool { return r.Status == AnswerOK || r.Status == AnswerDegraded }

// Start begins running each check in the background: at once, then every
// CheckInterval (or its own, Every) from the start of one run to the start of the
// next, each run under CheckTimeout (or its own). From then on every answer is read
// from the last results. The steps of one check's run:
//   - it answers within its timeout: that is its result;
//   - it has not answered at its timeout: its result is failing, "timed out after
//     …", its ctx is cancelled, and its next run waits for that Health call to
//     return, so a hung dependency never has more than one of our checks waiting;
//   - it has given no answer for three intervals (a Health call that ignores its
//     ctx): its entry is stale, "stale": true, and counts as failing.
//
// A failure is logged when it begins (and when its kind changes), a recovery when it
// ends: not once per run, nor once per probe. Once the Source is Draining the runs end,
// as no answer needs them. Start returns at once; a second Start, or a Start after
// Stop, does nothing. Use AwaitFirst to wait for the first results.
func (m *Monitor) Start() { m.e.bg.start(m.e) }

// Stop ends the background runs and waits for their goroutines. A Health call still
// running is not waited for: its ctx is cancelled and it ends on its own. The last
// results are kept, and go stale. Stop before Start, or twice, is safe.
func (m *Monitor) Stop() { m.e.bg.stop() }

// AwaitFirst waits until every check has its first result — an answer, or its
// timeout — so at most the longest CheckTimeout after Start, or until ctx is done,
// returning ctx.Err() then. The Host calls it before it reports Ready, so that a
// failing gating check is never reported ready for a moment. Before Start it waits
// for ctx.
func (m *Monitor) AwaitFirst(ctx context.Context) error { return m.e.awaitFirst(ctx) }

// Recheck runs the named check now on a started Monitor instead of at its next
// interval (after the run under way, if any); the answers change when it has
// answered. It does nothing for an unknown name or before Start.
func (m *Monitor) Recheck(name string) {
	for _, c := range m.e.list() {
		if c.name == name {
			select {
			case c.st.poke <- struct{}{}:
			default: // one is already due
			}
		}
	}
}

// Checks returns each check's last result, with its age and whether it gates, read
// from the background runs whatever the Source says (while draining too): before
// Start every entry is "pending". It runs no check; /debug/lifecycle shows it.
func (m *Monitor) Checks() map[string]CheckResult {
	list := m.e.list()
	out := make(map[string]CheckResult, len(list))
	for i, res := range m.e.lastResults(list) {
		res.Gates = list[i].gates
		out[list[i].name] = res
	}
	return out
}

// Evaluate answers readiness now, exactly as the readiness probe would: without a
// check while the Source is not Ready; otherwise, on a started Monitor, from the last
// results, at once; before Start, running every check concurrently, each under its
// timeout. A check still running when ctx is done is reported as canceled.
func (m *Monitor) Evaluate(ctx context.Context) Answer {
	_, ans := m.e.answer(ctx, nil)
	return ans
}

// Subscribe calls fn with the current answer and then with each new one, in a
// goroutine it owns, until the returned cancel is called. A new answer is one whose
// Status differs from the last one given to fn.
//
// A change of the Source (Ready → Draining, from the moment readiness is withdrawn)
// is seen at once for a Notifier, within PollInterval otherwise, and given to fn
// without running a check, even when a run of the checks is under way (that run is
// cancelled). While the Source is Ready the checks run again every CheckInterval.
//
// fn runs on the subscription's goroutine, one call at a time; a slow fn delays the
// next answer, not other subscriptions. cancel stops the subscription and waits for
// fn to return; it may be called more than once.
func (m *Monitor) Subscribe(fn func(Answer)) (cancel func()) {
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.follow(ctx, fn) })
	return func() {
		stop()
		wg.Wait()
	}
}

// follow is a subscription's loop.
func (m *Monitor) follow(ctx context.Context, fn func(Answer)) {
	last := ""
	recheck := time.NewTimer(m.cfg.CheckInterval)
	defer recheck.Stop()
	for {
		changed := m.changed()
		results := m.e.bg.wake()
		before := m.e.status()
		ans := m.evaluateUntilChange(ctx, before)
		if ctx.Err() != nil {
			return
		}
		if m.e.status() != before {
			continue // the Source moved while the checks ran: answer for the new one
		}
		if ans.Status != last {
			last = ans.Status
			fn(ans)
		}
		recheck.Reset(m.cfg.CheckInterval)
		if !m.e.bg.started() {
			results = nil // nothing changes a result but the next run
		}
		if !m.wait(ctx, changed, results, before, recheck.C) {
			return
		}
	}
}

// changed returns the Notifier's channel, or nil for a polled Source.
func (m *Monitor) changed() <-chan struct{} {
	if m.note == nil {
		return nil
	}
	return m.note.Changed()
}

// wait returns true when the Source has left before, when a check's result changed
// (results closed), or when recheck fires while it is Ready; false when ctx is done.
func (m *Monitor) wait(ctx context.Context, changed, results <-chan struct{}, before Status, recheck <-chan time.Time) bool {
	var poll <-chan time.Time
	if changed == nil {
		t := time.NewTicker(m.cfg.PollInterval)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-changed:
			return true
		case <-results:
			return true
		case <-poll:
			if m.e.status() != before {
				return true
			}
		case <-recheck:
			if before == StatusReady {
				return true
			}
		}
	}
}

// evaluateUntilChange is Evaluate, with the checks cancelled as soon as the Source
// leaves before.
func (m *Monitor) evaluateUntilChange(ctx context.Context, before Status) Answer {
	if before != StatusReady || len(m.e.list()) == 0 || m.e.bg.started() {
		return m.Evaluate(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if m.wait(ctx, m.changed(), nil, before, nil) {
			cancel()
		}
	})
	ans := m.Evaluate(ctx)
	cancel()
	return ans
}
