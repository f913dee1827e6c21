package host

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// PreStopHeader is the request header that must carry the PreStop token on
// PreStopPath. A header, not a query parameter: it stays out of access logs and
// Referer headers, and a browser sends no custom header to another origin without a
// CORS preflight that the probe listener never grants, so an <img> or a form on a
// page cannot start a drain.
const PreStopHeader = "X-Servicewright-Prestop"

// The environment variables the PreStop token is read from, one or the other: the
// token itself, or a file holding it (a mounted Secret; surrounding white space is
// trimmed).
const (
	PreStopTokenEnv     = "SW_PRESTOP_TOKEN"
	preStopTokenFileEnv = "SW_PRESTOP_TOKEN_FILE"
)

// MinPreStopTokenLen is the shortest PreStop token accepted, in bytes: 16 random
// characters (openssl rand -hex 16 gives 32) put guessing it out of reach.
const MinPreStopTokenLen = 16

// maxPreStopTokenLen is the longest PreStop token accepted, in bytes: a quarter of
// the probe listener's header limit (probeMaxHeaderBytes), so that the header that
// carries it always fits beside the others. A token file is read up to twice this
// (the token and the white space around it); a larger one is refused unread.
const maxPreStopTokenLen = probeMaxHeaderBytes / 4

// defaultPreStopGrace is how long a PreStop may go without a stop following it
// before it is reported as pending, when TerminationGracePeriod is not known: the
// default terminationGracePeriodSeconds of a Kubernetes pod.
const defaultPreStopGrace = 30 * time.Second

// refusalLogEvery spaces the log lines of refused PreStop requests, so that a
// client hammering the probe port cannot flood the log; every refusal is counted.
const refusalLogEvery = 10 * time.Second

// preStopAuth is what PreStopPath asks of a caller, and what it did with refusals.
type preStopAuth struct {
	sum    [sha256.Size]byte // of the token; compared, never the token itself
	set    bool              // a token is configured; without one the path refuses everyone
	header string            // the request header that carries it

	mu         sync.Mutex
	lastLog    time.Time // of the last refusal logged
	suppressed int       // refusals since then, not logged
}

// readPreStopToken reads the token from PreStopTokenEnv or preStopTokenFileEnv. A
// problem is recorded under the variable's name, without the value: a token too
// short or too long for the probe port's header limit, one that is not visible ASCII
// (a header could not carry it), both variables set, a file that cannot be read or
// is not a regular file of a fitting size (safe.ReadFile: never a blocking open). None set: no token, and
// the HTTP PreStop path refuses every request.
func readPreStopToken(lookup func(string) (string, bool), l *fault.Problems) preStopAuth {
	return readToken(lookup, PreStopTokenEnv, preStopTokenFileEnv, PreStopHeader, l)
}

// readToken reads a credential of the probe port from the variable env or from the
// file fileEnv names, under readPreStopToken's rules; header is where requests carry it.
func readToken(lookup func(string) (string, bool), env, fileEnv, header string, l *fault.Problems) preStopAuth {
	v, inline := lookup(env)
	file, fromFile := lookup(fileEnv)
	inline, fromFile = inline && v != "", fromFile && file != ""
	name := env
	switch {
	case inline && fromFile:
		l.Addf(env+", "+fileEnv, "set one or the other, not both")
		return preStopAuth{}
	case fromFile:
		name = fileEnv
		b, err := safe.ReadFile(file, 2*maxPreStopTokenLen)
		if err != nil {
			l.Addf(name, "cannot read the token file %q: %v", file, err)
			return preStopAuth{}
		}
		v = string(b)
	case !inline:
		return preStopAuth{}
	}
	v = strings.TrimSpace(v)
	switch {
	case len(v) < MinPreStopTokenLen:
		l.Addf(name, "the token must be at least %d bytes (e.g. openssl rand -hex 16), got %d",
			MinPreStopTokenLen, len(v))
		return preStopAuth{}
	case len(v) > maxPreStopTokenLen:
		l.Addf(name, "the token must be at most %d bytes, to fit the probe port's header limit, got %d",
			maxPreStopTokenLen, len(v))
		return preStopAuth{}
	case !sendable(v):
		l.Addf(name, "the token must be visible ASCII (no space, control character or non-ASCII byte): no HTTP header could carry it")
		return preStopAuth{}
	}
	return preStopAuth{sum: sha256.Sum256([]byte(v)), set: true, header: header}
}

// sendable reports whether v can be sent as a header value as it is: visible ASCII
// only, 0x21 to 0x7e.
func sendable(v string) bool {
	for i := range len(v) {
		if v[i] < 0x21 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// check returns "" when r carries the token, or why it is refused: "not_configured"
// (no token is set, so no request drains over HTTP), "no_credential" or
// "wrong_credential". The comparison takes the same time whatever the value sent.
func (a *preStopAuth) check(r *http.Request) string {
	got, ok := r.Header[a.header]
	switch {
	case !a.set:
		return "not_configured"
	case !ok || len(got) != 1 || got[0] == "":
		return "no_credential"
	}
	sum := sha256.Sum256([]byte(got[0]))
	if subtle.ConstantTimeCompare(sum[:], a.sum[:]) != 1 {
		return "wrong_credential"
	}
	return ""
}

// logRefusal reports whether this refusal is to be logged, and how many were not
// logged since the last one: the first is, then one every refusalLogEvery.
func (a *preStopAuth) logRefusal(now time.Time) (bool, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.lastLog.IsZero() && now.Sub(a.lastLog) < refusalLogEvery {
		a.suppressed++
		return false, 0
	}
	n := a.suppressed
	a.lastLog, a.suppressed = now, 0
	return true, n
}

// preStopMetrics are PreStop's own metrics.
type preStopMetrics struct {
	accepted prometheus.Counter
	refused  *prometheus.CounterVec
}

// registerPreStopMetrics registers PreStop's metrics with the Host's registry: the
// accepted and refused requests, and servicewright_prestop_pending_seconds, how long
// an accepted PreStop has gone without a stop following it.
func (h *Host) registerPreStopMetrics(l *fault.Problems) {
	m := preStopMetrics{
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "servicewright_prestop_accepted_total",
			Help: "PreStop calls accepted (over HTTP with the token, or in-process).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "servicewright_prestop_refused_total",
			Help: "PreStop requests refused, by reason: not_configured, no_credential, wrong_credential, method.",
		}, []string{"reason"}),
	}
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "servicewright_prestop_pending_seconds",
		Help: "Seconds since an accepted PreStop while no stop has followed it; 0 otherwise. " +
			"Above the termination grace period, the replica was left out of rotation.",
	}, func() float64 { return h.preStopPending().Seconds() })
	for _, c := range []prometheus.Collector{m.accepted, m.refused, pending} {
		if err := h.tel.reg.Register(c); err != nil {
			l.Addf("Telemetry.Registry", "cannot register the PreStop metrics: %v", err)
			return
		}
	}
	h.ahead.metrics = &m
}

// configurePreStop reads the PreStop token and registers PreStop's metrics. New
// calls it; problems go to l.
func (h *Host) configurePreStop(l *fault.Problems) {
	h.ahead.auth = readPreStopToken(h.opts.lookup, l)
	h.registerPreStopMetrics(l)
	if !h.ahead.auth.set && !h.spec.Probes.Disabled {
		h.log.Info("prestop: no token configured: the probe port's " + PreStopPath + " refuses every request, " +
			"and the drain starts with the stop (SIGTERM); set " + PreStopTokenEnv + " or " + preStopTokenFileEnv +
			" and send it in the " + PreStopHeader + " header from the preStop hook")
	}
}

// refusePreStop answers a refused PreStop request with code, counts it, and logs
// it with its caller unless a refusal was logged less than refusalLogEvery ago.
func (h *Host) refusePreStop(w http.ResponseWriter, r *http.Request, reason string, code int) {
	if m := h.ahead.metrics; m != nil {
		m.refused.WithLabelValues(reason).Inc()
	}
	if ok, suppressed := h.ahead.auth.logRefusal(time.Now()); ok {
		h.log.Warn("prestop: refused; readiness unchanged",
			zap.String("reason", reason), zap.String("method", r.Method),
			zap.String("remote_addr", r.RemoteAddr), zap.String("user_agent", clip(r.UserAgent())),
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

// clip bounds a caller-supplied string before it is logged.
func clip(s string) string {
	const most = 256
	if len(s) > most {
		return s[:most] + "…"
	}
	return s
}
