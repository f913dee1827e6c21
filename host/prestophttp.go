package host

import (
	"context"
	"net/http"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/internal/prestop"
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

// preStopHandler serves PreStopPath (prestop.Endpoint): GET and POST with the token
// run acceptPreStop detached from the request; anything else is refused, counted and
// logged. A drain longer than the probe listener's write timeout (30s +
// CheckTimeout) still completes, though its client sees the connection closed
// without an answer.
func (h *Host) preStopHandler() http.Handler {
	return &prestop.Endpoint{
		Token:   h.ahead.auth,
		Metrics: h.ahead.metrics,
		Log:     h.log,
		Accept:  func(ctx context.Context, who ...zap.Field) { _ = h.acceptPreStop(ctx, who...) },
	}
}
