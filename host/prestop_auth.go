package host

import (
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/prestop"
)

// The environment variables the PreStop token is read from, one or the other: the
// token itself, or a file holding it (a mounted Secret; surrounding white space is
// trimmed). The token guards prestop.Path on the probe port, the whole pod network
// can reach: without it, or with none configured, a request there is answered 403
// and changes nothing.
const (
	preStopTokenEnv     = "SW_PRESTOP_TOKEN"
	preStopTokenFileEnv = "SW_PRESTOP_TOKEN_FILE"
)

// maxPreStopTokenLen is the longest PreStop token accepted, in bytes: a quarter of
// the probe listener's header limit (probeMaxHeaderBytes), so that the header that
// carries it always fits beside the others. A token file is read up to twice this
// (the token and the white space around it); a larger one is refused unread.
const maxPreStopTokenLen = probeMaxHeaderBytes / 4

// defaultPreStopGrace is how long a PreStop may go without a stop following it
// before it is reported as pending, when TerminationGracePeriod is not known: the
// default terminationGracePeriodSeconds of a Kubernetes pod.
const defaultPreStopGrace = 30 * time.Second

// registerPreStopMetrics registers PreStop's metrics with the Host's registry: the
// accepted and refused requests, and servicewright_prestop_pending_seconds, how long
// an accepted PreStop has gone without a stop following it.
func (h *Host) registerPreStopMetrics(l *fault.Problems) {
	m, err := prestop.RegisterMetrics(h.tel.reg, func() float64 { return h.preStopPending().Seconds() })
	if err != nil {
		l.Addf("Telemetry.Registry", "cannot register the PreStop metrics: %v", err)
		return
	}
	h.ahead.metrics = m
}

// configurePreStop reads the PreStop token and registers PreStop's metrics. New
// calls it; problems go to l.
func (h *Host) configurePreStop(l *fault.Problems) {
	h.ahead.auth = prestop.ReadToken(h.opts.lookup, preStopTokenEnv, preStopTokenFileEnv, prestop.Header, maxPreStopTokenLen, l)
	h.registerPreStopMetrics(l)
	if !h.ahead.auth.Set() && !h.spec.Probes.Disabled {
		h.log.Info("prestop: no token configured: the probe port's " + prestop.Path + " refuses every request, " +
			"and the drain starts with the stop (SIGTERM); set " + preStopTokenEnv + " or " + preStopTokenFileEnv +
			" and send it in the " + prestop.Header + " header from the preStop hook")
	}
}
