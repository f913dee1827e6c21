package host

import (
	"fmt"
	"net/http"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/prestop"
)

// The environment variables the profiling token is read from, one or the other, as
// for the PreStop token: the token itself, or a file holding it. Setting one serves
// the runtime's profiles under pprofPath (the list) and pprofPath+"/name" on the
// probe listener — never on a public
// port — to requests that carry the token in prestop.PprofHeader; anything else there is
// answered 403 and counted. Unset, the paths do not exist (404).
const (
	pprofTokenEnv     = "SW_PPROF_TOKEN"
	pprofTokenFileEnv = "SW_PPROF_TOKEN_FILE"
	pprofPath         = "/debug/pprof"
)

// maxProfileSeconds bounds a CPU profile or an execution trace: long enough to see a
// hot path, short enough that a forgotten request does not hold the probe listener.
const maxProfileSeconds = 60

// configurePprof reads the profiling token and, when one is set, registers the
// count of refused requests. New calls it; problems go to l.
func (h *Host) configurePprof(l *fault.Problems) {
	h.pprof.auth = prestop.ReadToken(h.opts.lookup, pprofTokenEnv, pprofTokenFileEnv, prestop.PprofHeader, maxPreStopTokenLen, l)
	if !h.pprof.auth.Set() {
		return
	}
	h.pprof.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "servicewright_pprof_refused_total",
		Help: "Profiling requests on the probe port refused, by reason: no_credential, wrong_credential, method.",
	}, []string{"reason"})
	if err := h.tel.reg.Register(h.pprof.refused); err != nil {
		l.Addf("Telemetry.Registry", "cannot register the profiling metrics: %v", err)
	}
}

// pprofState is what the profiling endpoint asks of a caller and counts.
type pprofState struct {
	auth    *prestop.Token
	refused *prometheus.CounterVec
}

// pprofHandler serves the runtime's profiles, as net/http/pprof does, to a caller
// with the token: pprofPath lists them; pprofPath+"/profile?seconds=N" is a CPU
// profile and pprofPath+"/trace?seconds=N" an execution trace (N from 1 to 60,
// default 10; one CPU profile at a time); any other name is a runtime/pprof profile
// (heap, goroutine, allocs, block, mutex, threadcreate), with ?debug=N. It is nil
// when no token is set. net/http/pprof is not imported: its init would add the same
// handlers to http.DefaultServeMux, which a service may serve on its public port.
func (h *Host) pprofHandler() http.Handler {
	if !h.pprof.auth.Set() {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		reason := h.pprof.auth.Check(r)
		if reason == "" && r.Method != http.MethodGet {
			reason = "method"
		}
		if reason != "" {
			h.pprof.refused.WithLabelValues(reason).Inc()
			if ok, suppressed := h.pprof.auth.LogRefusal(time.Now()); ok {
				h.log.Warn("pprof: refused", zap.String("reason", reason), zap.String("remote_addr", r.RemoteAddr),
					zap.String("user_agent", prestop.Clip(r.UserAgent())), zap.Int("refusals_not_logged", suppressed))
			}
			http.Error(w, `{"status":"forbidden"}`, http.StatusForbidden)
			return
		}
		serveProfile(w, r, strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, pprofPath), "/"))
	})
}

// serveProfile writes the profile name asks for.
func serveProfile(w http.ResponseWriter, r *http.Request, name string) {
	switch name {
	case "":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "profile?seconds=N\ntrace?seconds=N")
		for _, p := range pprof.Profiles() {
			fmt.Fprintf(w, "%s?debug=1 (%d)\n", p.Name(), p.Count())
		}
	case "profile", "trace":
		sec, err := strconv.Atoi(r.URL.Query().Get("seconds"))
		if r.URL.Query().Get("seconds") == "" {
			sec, err = 10, nil
		}
		if err != nil || sec < 1 || sec > maxProfileSeconds {
			http.Error(w, fmt.Sprintf("seconds must be 1 to %d", maxProfileSeconds), http.StatusBadRequest)
			return
		}
		// The probe listener's write timeout is shorter than the longest profile.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Duration(sec)*time.Second + 10*time.Second))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		start, stop := pprof.StartCPUProfile, pprof.StopCPUProfile
		if name == "trace" {
			start, stop = trace.Start, trace.Stop
		}
		if err := start(w); err != nil {
			http.Error(w, "could not start: "+err.Error(), http.StatusConflict) // one at a time
			return
		}
		t := time.NewTimer(time.Duration(sec) * time.Second)
		select {
		case <-t.C:
		case <-r.Context().Done(): // the client left, or the listener is closing
			t.Stop()
		}
		stop()
	default:
		p := pprof.Lookup(name)
		if p == nil {
			http.Error(w, "unknown profile", http.StatusNotFound)
			return
		}
		debug, _ := strconv.Atoi(r.URL.Query().Get("debug"))
		if debug != 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		_ = p.WriteTo(w, debug)
	}
}
