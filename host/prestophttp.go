package host

import (
	"context"
	"net/http"
)

// PreStopPath is where the probe listener serves Host.PreStop, for GET and POST: the
// target of a Kubernetes preStop httpGet (the probe port, path /prestop). The answer,
// 200 {"status":"draining"}, comes once the drain delay has passed and the drain
// phases have run, or at once when an earlier call (or the shutdown) did them.
const PreStopPath = "/prestop"

// preStopHandler serves PreStopPath. The drain runs detached from the request: a
// client that goes away, or a kubelet whose hook gives up, does not cut the drain
// phases half-way; PreStop is bounded by DrainDelay and DrainPhasesBudget itself. A
// drain longer than the probe listener's write timeout (30s + CheckTimeout) still
// completes, though its client sees the connection closed without an answer. Other
// methods are answered 405.
func (h *Host) preStopHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		_ = h.PreStop(context.WithoutCancel(r.Context()))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(`{"status":"draining"}` + "\n"))
	})
}
