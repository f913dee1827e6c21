package host

import (
	"context"
	"net/http"

	"go.uber.org/zap"
)

// PreStopPath is where the probe listener serves Host.PreStop, for GET and POST: the
// target of a Kubernetes preStop httpGet (the probe port, path /prestop), which must
// send the deployment's token in the PreStopHeader header. The answer, 200
// {"status":"draining"}, comes once the drain delay has passed and the drain phases
// have run, or at once when an earlier call (or the shutdown) did them.
//
// The probe port is reachable from the whole pod network, so the path is guarded:
// a request without the token configured by SW_PRESTOP_TOKEN (or
// SW_PRESTOP_TOKEN_FILE), or with no token configured at all, is answered 403 and
// changes nothing. The probe listener serves the path under its one canonical
// spelling only: "/%70restop", "//prestop" and "/prestop/" are 404 there, and a query
// string changes nothing.
const PreStopPath = "/prestop"

// preStopHandler serves PreStopPath. Other methods are answered 405; a request
// without the right token 403 (see PreStopPath). Refusals are counted in
// servicewright_prestop_refused_total and logged with their caller, at most one line
// every 10 s; an accepted request is always logged with its caller.
//
// The drain runs detached from the request: a client that goes away, or a kubelet
// whose hook gives up, does not cut the drain phases half-way; PreStop is bounded by
// DrainDelay and DrainPhasesBudget itself. A drain longer than the probe listener's
// write timeout (30s + CheckTimeout) still completes, though its client sees the
// connection closed without an answer.
func (h *Host) preStopHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			h.refusePreStop(w, r, "method", http.StatusMethodNotAllowed)
			return
		}
		if reason := h.ahead.auth.check(r); reason != "" {
			h.refusePreStop(w, r, reason, http.StatusForbidden)
			return
		}
		_ = h.acceptPreStop(context.WithoutCancel(r.Context()), zap.String("caller", "http"),
			zap.String("remote_addr", r.RemoteAddr), zap.String("user_agent", clip(r.UserAgent())))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(`{"status":"draining"}` + "\n"))
	})
}
