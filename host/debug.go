package host

import (
	"encoding/json"
	"net/http"

	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/lock"
)

// Campaigner is implemented by entrypoints that campaign for leases
// (leader.Leadership); the Host shows each key's state in /debug/lifecycle.
type Campaigner interface {
	Leadership() map[string]lock.Status
}

// Snapshot is where the Host stands: the /debug/lifecycle document. (AppSpec's
// Lifecycle is something else: the registry of hooks and drain hooks.)
type Snapshot struct {
	Service     string                 `json:"service"`
	Instance    string                 `json:"instance"`
	Stage       string                 `json:"stage"`    // the Host's stage, named as in the shutdown report
	Shutdown    string                 `json:"shutdown"` // not_started, started, cleanup or completed
	Ready       bool                   `json:"ready"`
	Draining    bool                   `json:"draining"`
	Entrypoints []EntrypointStatus     `json:"entrypoints"`
	Leadership  map[string]lock.Status `json:"leadership"`
	// Checks are the readiness checks' last results, with their age, as the
	// background runs left them (health.Monitor.Checks): reading them runs none.
	Checks  map[string]health.CheckResult `json:"checks"`
	PreStop *PreStopStatus                `json:"prestop,omitempty"` // once a PreStop was accepted (prestop_pending.go)
}

// EntrypointStatus is one entrypoint in /debug/lifecycle. Detail is what an
// entrypoint with a StatusDetail() string method says of itself beyond its state
// (a Kafka consumer paused by a dependency outage: "paused: …"); empty otherwise.
type EntrypointStatus struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	InFlight int    `json:"in_flight"`
	Detail   string `json:"detail,omitempty"`
}

// Snapshot returns where the Host stands now, as /debug/lifecycle serves it.
func (h *Host) Snapshot() Snapshot {
	h.mu.Lock()
	entries := h.entries
	h.mu.Unlock()
	st := h.Readiness()
	l := Snapshot{
		Service:     h.spec.ServiceName,
		Instance:    h.instance,
		Stage:       h.Stage().String(),
		Shutdown:    h.shutdown.progress().String(),
		Ready:       st == health.StatusReady,
		Draining:    st == health.StatusDraining,
		Entrypoints: make([]EntrypointStatus, 0, len(entries)),
		Leadership:  map[string]lock.Status{},
		PreStop:     h.preStopStatus(),
		Checks:      h.monitor.Checks(),
	}
	for _, e := range entries {
		es := EntrypointStatus{Name: e.name, State: e.get().String(), InFlight: inFlight(e)}
		if d := e.caps.StatusDetail; d != nil {
			es.Detail = d.StatusDetail()
		}
		l.Entrypoints = append(l.Entrypoints, es)
		if lr := e.caps.leadership; lr != nil {
			for k, v := range lr.Leadership() {
				l.Leadership[k] = v
			}
		}
	}
	return l
}

func (h *Host) lifecycleHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(h.Snapshot())
	})
}
