package etcdkit

import (
	"context"
	"net/url"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

// Check returns a readiness check of an etcd client: a linearizable read of one
// key, which needs a raft leader and a quorum, as every lock operation does. The
// client reconnects on its own, so the same client recovers when the cluster
// does. Check(nil) returns nil, which health.NewReadiness and health.NewMonitor
// refuse.
func Check(c *clientv3.Client) health.Check {
	if c == nil {
		return nil
	}
	return health.CheckFunc(func(ctx context.Context) error {
		_, err := c.Get(ctx, "health")
		return err
	})
}

// ParseEndpoints parses s, a comma-separated list of etcd client URLs read from the
// variable named field (normally ETCD_ENDPOINTS): http://host:port or
// https://host:port each. A missing list or a malformed URL is a
// *fault.ConfigError naming field and what is wrong in fixed words: the list is
// never quoted, as a URL may carry a password.
func ParseEndpoints(field, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fault.Invalid(field, "must not be empty: list the etcd client URLs, comma-separated (http://host:2379,…)")
	}
	var out []string
	for i, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if reason := fault.URLProblem(e); reason != "" {
			return nil, fault.Invalid(field, "endpoint %d is not a URL: %s", i+1, reason)
		}
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Port() == "" {
			return nil, fault.Invalid(field, "endpoint %d must be http://host:port or https://host:port", i+1)
		}
		out = append(out, e)
	}
	return out, nil
}
