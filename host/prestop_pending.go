package host

import (
	"time"

	"go.uber.org/zap"
)

// PreStopStatus is the "prestop" field of /debug/lifecycle, present once a PreStop
// was accepted: when, and whether the stop that should follow it is late.
type PreStopStatus struct {
	RequestedAt time.Time `json:"requested_at"`
	// PendingSeconds is how long the PreStop has gone without a stop following it;
	// 0 once a stop came.
	PendingSeconds float64 `json:"pending_seconds"`
	// Overdue is true while the grace period has passed with no stop: the replica
	// is out of rotation and nothing will put it back but a stop or a restart.
	Overdue bool   `json:"overdue"`
	Grace   string `json:"grace"` // TerminationGracePeriod, or 30s
}

// preStopGrace is how long a stop may take to follow an accepted PreStop: in
// Kubernetes the grace period counts from the preStop hook, so a stop that has not
// come by then will not come from the kubelet.
func (h *Host) preStopGrace() time.Duration {
	if g := h.budgets.TerminationGracePeriod; g > 0 {
		return g
	}
	return defaultPreStopGrace
}

// stopFollowed reports whether a stop came since: one was requested, or the run
// went past serving.
func (h *Host) stopFollowed() bool {
	return h.shutdown.stopping().Err() != nil || h.Stage() > StageServe
}

// watchPreStop records when the first PreStop was accepted and arms the warning
// for a stop that does not follow within the grace period. The timer's func only
// logs; it returns at once when the stop came, so it needs no stopping.
func (h *Host) watchPreStop() {
	a := &h.ahead
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requested = time.Now()
	time.AfterFunc(h.preStopGrace(), h.preStopOverdue)
}

// preStopOverdue warns that no stop followed the PreStop within the grace period.
func (h *Host) preStopOverdue() {
	if h.stopFollowed() {
		return
	}
	h.log.Warn("prestop: no stop followed within the grace period; this replica stays out of rotation "+
		"(readiness draining) until it is stopped or restarted",
		zap.Duration("since_prestop", h.preStopPending()), zap.Duration("grace", h.preStopGrace()))
}

// preStopPending is how long the accepted PreStop has gone without a stop; 0 when
// none was accepted or a stop came.
func (h *Host) preStopPending() time.Duration {
	a := &h.ahead
	a.mu.Lock()
	requested := a.requested
	a.mu.Unlock()
	if requested.IsZero() || h.stopFollowed() {
		return 0
	}
	return time.Since(requested)
}

// preStopStatus is the "prestop" field of /debug/lifecycle; nil before any PreStop.
func (h *Host) preStopStatus() *PreStopStatus {
	a := &h.ahead
	a.mu.Lock()
	requested := a.requested
	a.mu.Unlock()
	if requested.IsZero() {
		return nil
	}
	pending := h.preStopPending()
	return &PreStopStatus{
		RequestedAt:    requested.UTC(),
		PendingSeconds: pending.Seconds(),
		Overdue:        pending >= h.preStopGrace(),
		Grace:          h.preStopGrace().String(),
	}
}
