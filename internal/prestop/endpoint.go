package prestop

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Metrics are the endpoint's own counters.
type Metrics struct {
	accepted prometheus.Counter
	refused  *prometheus.CounterVec
}

// RegisterMetrics registers with reg the accepted and refused requests, and
// servicewright_prestop_pending_seconds, which reads pending: how long an accepted
// PreStop has gone without a stop following it. It returns reg's refusal, and then
// registered nothing it could undo.
func RegisterMetrics(reg prometheus.Registerer, pending func() float64) (*Metrics, error) {
	m := &Metrics{
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "servicewright_prestop_accepted_total",
			Help: "PreStop calls accepted (over HTTP with the token, or in-process).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "servicewright_prestop_refused_total",
			Help: "PreStop requests refused, by reason: not_configured, no_credential, wrong_credential, method.",
		}, []string{"reason"}),
	}
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "servicewright_prestop_pending_seconds",
		Help: "Seconds since an accepted PreStop while no stop has followed it; 0 otherwise. " +
			"Above the termination grace period, the replica was left out of rotation.",
	}, pending)
	for _, c := range []prometheus.Collector{m.accepted, m.refused, gauge} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Accepted counts one accepted PreStop, over HTTP or in-process. A nil m counts
// nothing.
func (m *Metrics) Accepted() {
	if m != nil {
		m.accepted.Inc()
	}
}

// Endpoint serves the PreStop path for GET and POST. Other methods are answered
// 405; a request without the right token 403, changing nothing. Refusals are counted
// in servicewright_prestop_refused_total and logged with their caller, at most one
// line every 10 s; an accepted request is handed to Accept with its caller, which
// logs it.
//
// The drain runs detached from the request: a client that goes away, or a kubelet
// whose hook gives up, does not cut it half-way; Accept is bounded by the Host's
// budgets itself. It answers 200 {"status":"draining"} once Accept returned.
type Endpoint struct {
	Token   *Token
	Metrics *Metrics // nil: nothing counted
	Log     *zap.Logger
	Accept  func(ctx context.Context, who ...zap.Field)
}

func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		e.refuse(w, r, "method", http.StatusMethodNotAllowed)
		return
	}
	if reason := e.Token.Check(r); reason != "" {
		e.refuse(w, r, reason, http.StatusForbidden)
		return
	}
	e.Accept(context.WithoutCancel(r.Context()), zap.String("caller", "http"),
		zap.String("remote_addr", r.RemoteAddr), zap.String("user_agent", Clip(r.UserAgent())))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(`{"status":"draining"}` + "\n"))
}

// refuse answers a refused request with code, counts it, and logs it with its caller
// unless a refusal was logged less than 10 s ago.
func (e *Endpoint) refuse(w http.ResponseWriter, r *http.Request, reason string, code int) {
	if m := e.Metrics; m != nil {
		m.refused.WithLabelValues(reason).Inc()
	}
	if ok, suppressed := e.Token.LogRefusal(time.Now()); ok {
		e.Log.Warn("prestop: refused; readiness unchanged",
			zap.String("reason", reason), zap.String("method", r.Method),
			zap.String("remote_addr", r.RemoteAddr), zap.String("user_agent", Clip(r.UserAgent())),
			zap.Int("refusals_not_logged", suppressed))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if code == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", "GET, POST")
	}
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, "{\"status\":%q}\n", strings.ToLower(strings.ReplaceAll(http.StatusText(code), " ", "_")))
}
