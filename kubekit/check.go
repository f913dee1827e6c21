package kubekit

import (
	"context"

	"github.com/servicewright/servicewright/health"
)

// checkKey names the lock a readiness check reads (and never takes).
const checkKey = "servicewright-readiness"

// Check returns a readiness check of the Lock: one read of a Lease, which fails, naming
// what is missing, when the apiserver is unreachable, refuses the credentials or the
// RBAC permission, or the namespace does not exist. Check(nil) returns nil, which
// health.NewReadiness and health.NewMonitor refuse.
func Check(l *Lock) health.Check {
	if l == nil {
		return nil
	}
	return health.CheckFunc(func(ctx context.Context) error {
		_, err := l.Inspect(ctx, checkKey)
		return err
	})
}
