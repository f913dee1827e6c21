package health

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// Source tells the handlers where the process stands. *State is one; FromFunc adapts a
// State that does not exist yet. A Source that panics is answered as Unavailable, and
// the panic is logged, never served.
type Source interface {
	Status() Status
}

var _ Source = (*State)(nil)

// FromFunc returns a Source that calls f on every probe, for an application that
// creates its State later than its routes. f returning nil means Unavailable; f
// panicking means Unavailable too (logged by the handler). A nil f is refused by
// NewReadiness and NewMonitor as a nil Source.
func FromFunc(f func() *State) Source { return funcSource(f) }

type funcSource func() *State

func (f funcSource) Status() Status {
	if f == nil {
		return StatusUnavailable
	}
	if s := f(); s != nil {
		return s.Status()
	}
	return StatusUnavailable
}

func (f funcSource) Started() bool {
	if f == nil {
		return false
	}
	s := f()
	return s != nil && s.Started()
}

// ReadinessConfig configures NewReadiness. Every zero field takes the default named
// after it.
type ReadinessConfig struct {
	// Checks are the dependencies the process needs, by name; a failing one
	// degrades readiness unless declared with Gating. Names
	// appear in the body and in ?exclude=; they must be non-empty, without commas.
	Checks map[string]Check
	// CheckTimeout is each check's own budget (not the sweep's). 0 means 2s;
	// negative is refused.
	CheckTimeout time.Duration
	// Logger receives check failures (with their messages), panics and timeouts. nil
	// logs nothing.
	Logger *zap.Logger
	// Registerer, when set, receives the gauge servicewright_readiness_check_failing
	// {check, gates}, set at each probe: 1 for a check whose run failed, with gates
	// "false" when it only degrades readiness (see Gating). nil registers nothing.
	Registerer prometheus.Registerer
}

// NewReadiness returns the readiness probe handler (/readyz), mountable on any mux and
// answering any method.
//
// While src is Unavailable it answers 503 {"status": "unavailable"}; while Draining, 503
// {"status": "draining"}; in both cases without running a check and with "checks": {}.
// When Ready it runs every check concurrently, each under its own CheckTimeout, and
// answers 200 "ok" when all pass (or there are none), 200 "degraded" when only checks
// not declared with Gating fail (a shared dependency: see Gating), and 503 "failing"
// when a Gating check fails, with one entry per check either way. A check that has not returned at its timeout is
// reported as {"ok": false, "detail": "timed out after 2s"}; the response does not wait
// for it, and its ctx is cancelled then. A failing check's detail is the error's Go
// type (the first under fmt.Errorf's and errors.Join's wrappers), never its message,
// which may carry a DSN or a password; a panicking check's is "panic", and the panic
// is logged.
//
// ?exclude=a,b (or repeated ?exclude=) skips the named checks; a name that is not a
// check answers 400 with {"error": …} naming it. Every answer is JSON with
// Cache-Control: no-store.
//
// Each probe runs every check, so the probe period is a real query rate against each
// dependency, and a hung one holds the answer for its timeout. For answers read from
// checks run in the background, serve a started Monitor instead (it is an
// http.Handler with the same answers); the Host does. Keep the endpoint internal,
// like /metrics.
//
// Like NewMonitor, it takes its configuration first and the Source second. An invalid argument (nil src, a nil or badly named check, a negative
// CheckTimeout) returns a *fault.ConfigError listing each problem by field.
func NewReadiness(cfg ReadinessConfig, src Source) (http.Handler, error) {
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
	e := newEvaluator(src, cfg.Checks, cfg.CheckTimeout, 0, cfg.Logger)
	e.failing = failing
	return readiness{e}, nil
}

// resolve fills c's defaults and records each problem in l under its field.
func (c ReadinessConfig) resolve(l *fault.Problems) ReadinessConfig {
	validateTimeout(l, c.CheckTimeout)
	c.CheckTimeout = cmp.Or(max(c.CheckTimeout, 0), defaultCheckTimeout)
	validateChecks(l, c.Checks, c.CheckTimeout, defaultCheckInterval)
	return c
}

type readiness struct{ e *evaluator }

func (h readiness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	skip, unknown := h.e.parseExclude(r.URL.Query()["exclude"])
	if len(unknown) > 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{
			"error": "unknown check in exclude: " + strings.Join(unknown, ", "),
		})
		return
	}
	code, ans := h.e.answer(r.Context(), skip)
	writeJSON(w, code, ans)
}

type statusBody struct {
	Status string `json:"status"`
}

// Liveness returns the liveness probe handler (/livez): always 200 {"status": "ok"}. It
// runs no check and ignores the state: a draining process is alive, and failing
// liveness would get it killed in the middle of its drain.
func Liveness() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, statusBody{AnswerOK})
	})
}

// Startup returns the startup probe handler (/startupz): 503 {"status": "unavailable"}
// until the process has started, then 200 {"status": "ok"} for good, through the drain.
// Started means src has been seen Ready, or is Draining (a process stopped before it
// was ever ready is not starting any more; failing this probe would only get it killed
// during its cleanup), or reports Started() true (as *State does, so a Ready phase no
// probe happened to see still counts). It runs no check. A panicking src answers 503.
func Startup(src Source) http.Handler { return newStartup(src, nil) }

type startup struct {
	src  Source
	log  *zap.Logger
	seen atomic.Bool
}

func newStartup(src Source, log *zap.Logger) *startup {
	if log == nil {
		log = zap.NewNop()
	}
	return &startup{src: src, log: log}
}

func (h *startup) started() bool {
	if h.seen.Load() {
		return true
	}
	var started bool
	err := safe.Call("health source", func() error {
		switch h.src.Status() {
		case StatusReady, StatusDraining:
			started = true
		default:
			s, ok := h.src.(interface{ Started() bool })
			started = ok && s.Started()
		}
		return nil
	})
	if err != nil {
		logPanic(h.log, "health source panicked; answering unavailable", err)
		return false
	}
	if started {
		h.seen.Store(true)
	}
	return started
}

func (h *startup) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if h.started() {
		writeJSON(w, http.StatusOK, statusBody{AnswerOK})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, statusBody{AnswerUnavailable})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen with the types above
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
