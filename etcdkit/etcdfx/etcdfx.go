// Package etcdfx wires etcd into a Host's fx container (hostfx.Container): the
// client, the lock and a readiness check. It is apart from etcdkit so that a plain
// lock user links neither fx nor the Host.
package etcdfx

import (
	"cmp"
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/etcdkit"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/lock"
)

// defaultDialTimeout bounds the client's first connection to each endpoint.
const defaultDialTimeout = 2 * time.Second

// ModuleConfig configures Module.
type ModuleConfig struct {
	// Endpoints lists the etcd client URLs, comma-separated, normally the
	// ETCD_ENDPOINTS environment variable: http://host:2379,http://host2:2379.
	Endpoints string
	// Lock configures the lock the module provides.
	Lock etcdkit.LockConfig
	// CheckName names the readiness check the module registers with the Host.
	// Default "etcd".
	CheckName string
	// DialTimeout bounds the client's first connection to an endpoint. Default 2s.
	DialTimeout time.Duration
}

// Module wires etcd into a Host's fx container. It provides:
//
//   - *clientv3.Client for cfg.Endpoints, which connects in the background (a
//     cluster that is down does not hold up the container's start); it is closed
//     by the container's OnStop, after the entrypoints have stopped and released
//     their leases;
//   - *etcdkit.Lock, and the same lock as lock.Lock;
//   - a readiness check named cfg.CheckName ("etcd"): a linearizable read, which
//     needs a quorum.
//
// Missing or malformed endpoints are a *fault.ConfigError naming ETCD_ENDPOINTS,
// reported when the container is built, without echoing them. Nothing is sent to
// etcd until the client is used.
func Module(cfg ModuleConfig) fx.Option {
	endpoints, err := etcdkit.ParseEndpoints("ETCD_ENDPOINTS", cfg.Endpoints)
	if err != nil {
		return fx.Error(err)
	}
	return fx.Module("etcdfx",
		fx.Provide(
			func(lc fx.Lifecycle) (*clientv3.Client, error) {
				c, err := clientv3.New(clientv3.Config{
					Endpoints:   endpoints,
					DialTimeout: cmp.Or(cfg.DialTimeout, defaultDialTimeout),
					Logger:      zap.NewNop(),
				})
				if err != nil {
					return nil, err
				}
				lc.Append(fx.Hook{OnStop: func(context.Context) error { return c.Close() }})
				return c, nil
			},
			func(c *clientv3.Client) (*etcdkit.Lock, error) { return etcdkit.NewLock(c, cfg.Lock) },
			func(l *etcdkit.Lock) lock.Lock { return l },
		),
		hostfx.Check(cmp.Or(cfg.CheckName, "etcd"), func(c *clientv3.Client) health.Check { return etcdkit.Check(c) }),
	)
}
