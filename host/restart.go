package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/internal/wait"
)

// The restart schedule of a failed non-essential entrypoint: the shared jittered
// backoff (wait.Backoff), from about a second up to half a minute; a Serve that ran
// for restartMax before it failed starts the schedule over.
const (
	restartInitial = time.Second
	restartMax     = 30 * time.Second
)

// newRestartCounter registers servicewright_entrypoint_restarts_total{entrypoint}.
func newRestartCounter(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "servicewright_entrypoint_restarts_total",
		Help: "Times the Host called Serve again on a non-essential entrypoint after it failed.",
	}, []string{"entrypoint"})
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return c, nil
}

// restarts schedules the restarts of one run's failed non-essential entrypoints.
// Its timers hand each due entry to the serve loop through due; the loop alone
// starts Serve, so the serve group is never touched from a timer.
type restarts struct {
	due     chan *entry // buffered: one pending restart per entry at most
	timers  map[*entry]*time.Timer
	backoff map[*entry]*wait.Backoff
	began   map[*entry]time.Time // when its latest Serve began
	count   map[*entry]int       // restarts so far
}

func newRestarts(n int) *restarts {
	return &restarts{due: make(chan *entry, n), timers: map[*entry]*time.Timer{},
		backoff: map[*entry]*wait.Backoff{}, began: map[*entry]time.Time{}, count: map[*entry]int{}}
}

// schedule arranges e's next restart and returns the wait before it.
func (rs *restarts) schedule(e *entry) time.Duration {
	b := rs.backoff[e]
	if b == nil {
		b = &wait.Backoff{Initial: restartInitial, Max: restartMax}
		rs.backoff[e] = b
	}
	if time.Since(rs.began[e]) >= restartMax {
		b.Reset() // it served a good while: a new failure, not the same one again
	}
	d := b.Next()
	rs.timers[e] = time.AfterFunc(d, func() { rs.due <- e })
	return d
}

// refused reports whether err is e's refusal of a restart: an entrypoint that
// cannot serve twice answers the Host's second Serve with ErrOutOfTurn.
func (rs *restarts) refused(e *entry, err error) bool {
	return rs.count[e] > 0 && errors.Is(err, entrypoint.ErrOutOfTurn)
}

// stop cancels every restart not yet due.
func (rs *restarts) stop() {
	for _, t := range rs.timers {
		t.Stop()
	}
}

// serveFailed handles the failure of a non-essential entrypoint during Serve: it is
// logged and counted, readiness is withdrawn while it is down when its registration
// says GatesReadiness, and its Serve is called again after the shared jittered
// backoff — unless the failure is marked fault.Permanent (no retry can fix it), or
// the entrypoint refused a second Serve (ErrOutOfTurn: an entrypoint that cannot
// serve twice); either is logged once and leaves it failed.
func (r *run) serveFailed(rs *restarts, e *entry, err error) {
	h := r.h
	r.failed(&EntrypointError{Entrypoint: e.name, Err: err})
	h.recheckGate(e)
	if fault.IsPermanent(err) {
		r.log().Error("non-essential entrypoint failed permanently and is not restarted (no retry can fix it); the others keep serving",
			zap.String("entrypoint", e.name), zap.Error(err))
		return
	}
	if rs.refused(e, err) {
		r.log().Error("non-essential entrypoint failed and cannot be restarted (its Serve refuses a second call); the others keep serving",
			zap.String("entrypoint", e.name), zap.Error(err))
		return
	}
	d := rs.schedule(e)
	r.log().Error("non-essential entrypoint failed; the others keep serving, and it is restarted",
		zap.String("entrypoint", e.name), zap.Duration("restart_in", d), zap.Int("restarts", rs.count[e]), zap.Error(err))
}

// restart calls e's Serve again, in the serve group.
func (r *run) restart(rs *restarts, e *entry) {
	rs.count[e]++
	rs.began[e] = time.Now()
	r.h.restarts.WithLabelValues(e.name).Inc()
	r.log().Info("restarting non-essential entrypoint", zap.String("entrypoint", e.name), zap.Int("restart", rs.count[e]))
	e.set(entryServing)
	r.serve.start(e)
	r.h.recheckGate(e)
}

// gateName is the readiness check of an entrypoint registered with GatesReadiness.
func gateName(e string) string { return "entrypoint:" + e }

// gateCheck fails while the entrypoint is failed.
func gateCheck(e *entry) health.Check {
	return health.CheckFunc(func(context.Context) error {
		if e.get() == entryFailed {
			return &EntrypointError{Entrypoint: e.name, Err: fmt.Errorf("failed; restarting")}
		}
		return nil
	})
}

// recheckGate updates the readiness of an entrypoint registered with GatesReadiness
// at once.
func (h *Host) recheckGate(e *entry) {
	if e.reg.GatesReadiness {
		h.monitor.Recheck(gateName(e.name))
	}
}
