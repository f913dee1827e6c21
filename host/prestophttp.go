package host

import (
	"context"
	"net/http"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/internal/prestop"
)

// preStopHandler serves prestop.Path (prestop.Endpoint): GET and POST with the token
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
