package health

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// defaultCheckTimeout is each check's budget when none is configured.
const defaultCheckTimeout = 2 * time.Second

// staleAfter is how many of its intervals a check may go without an answer before
// its entry says it is stale.
const staleAfter = 3

// The values of Answer.Status.
const (
	AnswerOK          = "ok"          // Ready, and every check that ran passed: 200
	AnswerDegraded    = "degraded"    // Ready, but a check not declared Gating failed: still 200
	AnswerFailing     = "failing"     // Ready, but a check declared with Gating failed: 503
	AnswerDraining    = "draining"    // shutting down or announced as leaving
	AnswerUnavailable = "unavailable" // not ready yet (or the Source failed)
)

// CheckResult is one check's entry in a readiness body.
type CheckResult struct {
	OK bool `json:"ok"`
	// Detail is "ok"; or, for a failure, "timed out after 2s", "panic", the Go type
	// of the error (see Readiness) — never the error's message — or "pending" for a
	// check a running Monitor has not heard from yet.
	Detail string `json:"detail"`
	// Gates is true for a check declared with Gating, whose failure withdraws
	// readiness; absent from the body otherwise.
	Gates bool `json:"gates,omitempty"`
	// Age is how long ago the result was taken, for a Monitor that runs its checks
	// in the background ("1.25s"); absent when the check ran for this answer.
	Age string `json:"age,omitempty"`
	// Stale is true when the check has not answered for three of its intervals (a
	// Health call that ignores its ctx, say): the result shown is the last one it
	// gave, and it counts as a failure.
	Stale bool `json:"stale,omitempty"`
}

// Answer is how readiness is answered — the /readyz body, and what Evaluate returns
// and Subscribe delivers: {"status": …, "checks": {name: {"ok", "detail"}}}.
// Checks is empty, never null, when no check ran.
type Answer struct {
	Status string                 `json:"status"`
	Checks map[string]CheckResult `json:"checks"`
}

type namedCheck struct {
	name              string
	check             Check
	gates             bool          // declared with Gating
	interval, timeout time.Duration // resolved: the check's own (Every) or the evaluator's
	st                *slot         // its last result, for the background runs and the logs
}

// evaluator answers readiness from a Source and a set of checks. The Readiness handler
// and the probe listener share it, so both give the same answer and the same body.
type evaluator struct {
	src      Source
	checks   atomic.Pointer[[]namedCheck] // sorted by name; replaced whole by add, never changed in place
	addMu    sync.Mutex                   // serialises add
	timeout  time.Duration
	interval time.Duration
	log      *zap.Logger
	failing  *prometheus.GaugeVec // nil: no metric (see newFailingGauge)
	bg       background           // the background runs (background.go)
}

// newFailingGauge registers with reg the gauge servicewright_readiness_check_failing
// {check, gates}: 1 while the check's last run failed, 0 once it passed; gates says
// whether the check was declared with Gating (a failure withdraws readiness) or not
// (it only degrades it). A nil reg gives nil.
func newFailingGauge(reg prometheus.Registerer) (*prometheus.GaugeVec, error) {
	if reg == nil {
		return nil, nil
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "servicewright_readiness_check_failing",
		Help: "1 while the readiness check's last run failed. gates=\"false\": a shared dependency, readiness degraded but kept; gates=\"true\": readiness withdrawn.",
	}, []string{"check", "gates"})
	if err := reg.Register(g); err != nil {
		return nil, err
	}
	return g, nil
}

// newEvaluator expects validated arguments; a zero timeout or interval becomes the
// default.
func newEvaluator(src Source, checks map[string]Check, timeout, interval time.Duration, log *zap.Logger) *evaluator {
	if log == nil {
		log = zap.NewNop()
	}
	e := &evaluator{src: src, timeout: cmp.Or(timeout, defaultCheckTimeout), interval: cmp.Or(interval, defaultCheckInterval), log: log}
	list := make([]namedCheck, 0, len(checks))
	for _, name := range slices.Sorted(mapKeys(checks)) {
		list = append(list, e.named(name, checks[name]))
	}
	e.checks.Store(&list)
	return e
}

// named resolves c's declaration and timing.
func (e *evaluator) named(name string, c Check) namedCheck {
	d := declarationOf(c)
	return namedCheck{
		name: name, check: d.Check, gates: d.gates,
		interval: cmp.Or(d.interval, e.interval), timeout: cmp.Or(d.timeout, e.timeout),
		st: &slot{poke: make(chan struct{}, 1)},
	}
}

// list returns the checks, sorted by name. The slice is never modified.
func (e *evaluator) list() []namedCheck { return *e.checks.Load() }

// add adds the check c under name, validated as a Checks entry is: a bad name, a nil
// check or a name already in use is a *fault.ConfigError naming Checks[name]. An
// evaluation under way keeps the set it began with; the next one runs c too, and
// background runs under way start running it.
func (e *evaluator) add(name string, c Check) error {
	e.addMu.Lock()
	defer e.addMu.Unlock()
	var l fault.Problems
	validateChecks(&l, map[string]Check{name: c}, e.timeout, e.interval)
	old := e.list()
	if slices.ContainsFunc(old, func(n namedCheck) bool { return n.name == name }) {
		l.Addf(fmt.Sprintf("Checks[%q]", name), "name is used by more than one check")
	}
	if err := l.Err(); err != nil {
		return err
	}
	nc := e.named(name, c)
	list := append(slices.Clone(old), nc)
	slices.SortFunc(list, func(a, b namedCheck) int { return strings.Compare(a.name, b.name) })
	e.checks.Store(&list)
	e.bg.spawn(e, nc)
	return nil
}

// status asks the Source, turning a panic into Unavailable. The panic is logged and
// never served.
func (e *evaluator) status() Status {
	return sourceStatus(e.src, e.log)
}

func sourceStatus(src Source, log *zap.Logger) Status {
	var st Status
	err := safe.Call("health source", func() error {
		st = src.Status()
		return nil
	})
	if err != nil {
		logPanic(log, "health source panicked; answering unavailable", err)
		return StatusUnavailable
	}
	return st
}

func logPanic(log *zap.Logger, msg string, err error, fields ...zap.Field) {
	fields = append(fields, zap.Error(err))
	if pe, ok := errors.AsType[*fault.PanicError](err); ok {
		fields = append(fields, zap.ByteString("stack", pe.Stack))
	}
	log.Error(msg, fields...)
}

// parseExclude reads ?exclude= values (comma-separated, possibly repeated): the set of
// checks to skip, and the names that are not checks.
func (e *evaluator) parseExclude(values []string) (skip map[string]bool, unknown []string) {
	for _, v := range values {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if !slices.ContainsFunc(e.list(), func(c namedCheck) bool { return c.name == name }) {
				if !slices.Contains(unknown, name) {
					unknown = append(unknown, name)
				}
				continue
			}
			if skip == nil {
				skip = make(map[string]bool)
			}
			skip[name] = true
		}
	}
	return skip, unknown
}

// answer answers readiness. Checks count only when the Source says Ready: before that
// and while draining the answer is the state alone, which is cheap and exactly what a
// load balancer needs. Once the background runs started (Monitor.Start) the answer is
// read from their last results and never waits on a dependency; before, the checks
// run for the answer.
func (e *evaluator) answer(ctx context.Context, skip map[string]bool) (code int, ans Answer) {
	ans.Checks = map[string]CheckResult{}
	switch e.status() {
	case StatusReady:
	case StatusDraining:
		ans.Status = AnswerDraining
		return 503, ans
	default:
		ans.Status = AnswerUnavailable
		return 503, ans
	}
	var run []namedCheck
	for _, c := range e.list() {
		if !skip[c.name] {
			run = append(run, c)
		}
	}
	var results []CheckResult
	if e.bg.started() {
		results = e.lastResults(run)
	} else {
		results = e.run(ctx, run)
	}
	ans.Status = AnswerOK
	for i, res := range results {
		res.Gates = run[i].gates
		ans.Checks[run[i].name] = res
		switch {
		case res.OK:
		case res.Gates:
			ans.Status = AnswerFailing
		case ans.Status == AnswerOK:
			ans.Status = AnswerDegraded
		}
	}
	if ans.Status == AnswerFailing {
		return 503, ans
	}
	return 200, ans // ok, or degraded by a check that does not gate traffic
}

// run runs checks concurrently, each under its own timeout, and returns their results
// in order. It returns when every check has answered or reached its timeout: a check
// still running then is reported as timed out and left to finish on its own (its ctx
// is already cancelled), its result discarded. When ctx ends first (the prober went
// away), the checks still running are reported as canceled.
func (e *evaluator) run(ctx context.Context, checks []namedCheck) []CheckResult {
	results := make([]CheckResult, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			res, _, ok := e.once(ctx, c)
			if !ok {
				res = CheckResult{Detail: "canceled"}
			}
			results[i] = res
		})
	}
	wg.Wait()
	return results
}

// once runs c once under its timeout and records the result. It returns when c
// answered or its timeout passed, whichever is first: running is then the channel on
// which the Health call still running (its ctx cancelled) will return, nil when it
// has returned. ok is false when ctx ended first; nothing is recorded then.
func (e *evaluator) once(ctx context.Context, c namedCheck) (res CheckResult, running <-chan struct{}, ok bool) {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		defer cancel()
		err = safe.Call(fmt.Sprintf("health check %q", c.name), func() error { return c.check.Health(cctx) })
	}()
	// Started after the check's context, so no check is cut before its own deadline.
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	var cause error // what the log says
	select {
	case <-done:
		if ctx.Err() != nil && !errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return CheckResult{}, nil, false
		}
		res, cause = e.judge(c, cctx, err), err
	case <-timer.C:
		res, running = CheckResult{Detail: "timed out after " + c.timeout.String()}, done
		cause = context.DeadlineExceeded
	case <-ctx.Done():
		return CheckResult{}, done, false
	}
	e.record(c, res, cause)
	return res, running, true
}

// judge turns a check's outcome into its entry.
func (e *evaluator) judge(c namedCheck, ctx context.Context, err error) CheckResult {
	if err == nil {
		return CheckResult{OK: true, Detail: "ok"}
	}
	res := CheckResult{Detail: errorType(err)}
	if _, ok := errors.AsType[*fault.PanicError](err); ok {
		res.Detail = "panic"
	} else if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.Detail = "timed out after " + c.timeout.String()
	}
	return res
}

// record keeps res as c's last result, sets the gauge, and when the result differs
// from the one before (ok or not, and the detail) logs the change — the failure with
// the error's message (logs are not served to whoever reaches the probe) and whether
// it withdraws readiness or only degrades it; the recovery — and wakes whoever
// follows the results. A check failing the same way at every run is logged once.
func (e *evaluator) record(c namedCheck, res CheckResult, err error) {
	prev := c.st.last.Swap(&result{res: res, at: time.Now()})
	if e.failing != nil {
		v := 0.0
		if !res.OK {
			v = 1
		}
		e.failing.WithLabelValues(c.name, strconv.FormatBool(c.gates)).Set(v)
	}
	if prev != nil && prev.res.OK == res.OK && prev.res.Detail == res.Detail {
		return
	}
	defer e.bg.notify()
	effect := zap.String("readiness", AnswerDegraded) // kept: a shared dependency
	if c.gates {
		effect = zap.String("readiness", "withdrawn")
	}
	switch {
	case res.OK && prev != nil:
		e.log.Info("readiness check recovered", zap.String("check", c.name))
	case res.OK:
	case res.Detail == "panic":
		logPanic(e.log, "readiness check panicked", err, zap.String("check", c.name), effect)
	default:
		e.log.Warn("readiness check failed", zap.String("check", c.name), zap.String("detail", res.Detail), effect, zap.Error(err))
	}
}

// errorType names err for a probe body: the Go type (as fmt's %T prints it) of the
// outermost error in its chain that is not a plain wrapper from fmt.Errorf("…%w…") or
// errors.Join; through those it follows the first wrapped error. So
// fmt.Errorf("redis: %w", opErr) is reported as "*net.OpError", the type a reader can
// act on, while the wrapper's own text (and the DSN it may hold) stays out. A type a
// driver defines, such as *pgconn.ConnectError, is reported as is, not unwrapped.
func errorType(err error) string {
	for {
		next := plainUnwrap(err)
		if next == nil {
			return fmt.Sprintf("%T", err)
		}
		err = next
	}
}

func plainUnwrap(err error) error {
	switch fmt.Sprintf("%T", err) {
	case "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
	default:
		return nil
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return u.Unwrap()
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if e != nil {
				return e
			}
		}
	}
	return nil
}
