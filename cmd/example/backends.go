package main

import (
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/etcdkit"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/pgkit"
	"github.com/servicewright/servicewright/pgkit/pgfx"
	"github.com/servicewright/servicewright/rediskit"
)

// backends are the real services the example uses when their variables are set:
// REDIS_URL, DATABASE_URL, KAFKA_BROKERS, ETCD_ENDPOINTS. Unset, it runs on
// embedded stand-ins. LEADER_LOCK picks the leader's lock backend: redis, postgres,
// etcd, kubernetes (a Lease in POD_NAMESPACE, through KUBECONFIG or the pod's
// service account) or memory; unset, Redis when REDIS_URL is set, PostgreSQL when
// only DATABASE_URL is, memory otherwise.
//
// The URLs are held as fault.Secret, which prints as a mask wherever it is
// formatted, and revealed only to the client that connects. No error about them
// carries their text: the parsers' errors, which quote it, are replaced by ones
// naming the variable and what is wrong (rediskit.ParseURL, pgkit.ParseConfig).
type backends struct {
	redisURL    fault.Secret
	databaseURL fault.Secret
	pool        *pgxpool.Config // parsed from databaseURL
	leaderLock  string          // LEADER_LOCK, resolved: redis, postgres, etcd or memory
	etcd        fault.Secret    // ETCD_ENDPOINTS
	kubeconfig  string          // KUBECONFIG (a path)
	namespace   string          // POD_NAMESPACE
}

func readBackends(l *fault.Problems) backends {
	b := backends{redisURL: fault.Secret(os.Getenv("REDIS_URL")), databaseURL: fault.Secret(os.Getenv("DATABASE_URL"))}
	if b.redisURL != "" {
		if _, err := rediskit.ParseURL("REDIS_URL", b.redisURL.Reveal()); err != nil {
			l.Merge("", err)
		}
	}
	if b.databaseURL != "" {
		if _, err := pgkit.ParseConfig("DATABASE_URL", b.databaseURL.Reveal()); err != nil {
			l.Merge("", err)
		} else if b.pool, err = pgxpool.ParseConfig(b.databaseURL.Reveal()); err != nil {
			l.Addf("DATABASE_URL", "the pool settings (pool_max_conns, pool_min_conns, …) are malformed")
		}
	}
	b.etcd = fault.Secret(os.Getenv("ETCD_ENDPOINTS"))
	if b.etcd != "" {
		if _, err := etcdkit.ParseEndpoints("ETCD_ENDPOINTS", b.etcd.Reveal()); err != nil {
			l.Merge("", err)
		}
	}
	b.kubeconfig, b.namespace = os.Getenv("KUBECONFIG"), os.Getenv("POD_NAMESPACE")
	b.leaderLock = readLeaderLock(l, b)
	return b
}

// readLeaderLock resolves LEADER_LOCK against the variables each backend needs.
func readLeaderLock(l *fault.Problems, b backends) string {
	v := os.Getenv("LEADER_LOCK")
	need := map[string]struct {
		variable string
		set      bool
	}{"redis": {"REDIS_URL", b.redisURL != ""}, "postgres": {"DATABASE_URL", b.databaseURL != ""}, "etcd": {"ETCD_ENDPOINTS", b.etcd != ""}}
	switch n, ok := need[v]; {
	case v == "":
		switch {
		case b.redisURL != "":
			return "redis"
		case b.databaseURL != "":
			return "postgres"
		}
		return "memory"
	case v == "memory", v == "kubernetes": // kubefx names what it lacks
	case !ok:
		l.Addf("LEADER_LOCK", "must be redis, postgres, etcd, kubernetes or memory (or unset), got %q", v)
	case !n.set:
		l.Addf(n.variable, "must be set when LEADER_LOCK is %s", v)
	}
	return v
}

// module provides a PostgreSQL pool when DATABASE_URL is set (pgfx.Module), closes
// it with the container, and registers a readiness check named "postgres".
func (b backends) module() fx.Option {
	var opts []fx.Option
	// The Redis client comes with the leader module (digest.go).
	if b.pool != nil {
		// pgfx provides the pool (closed with the container), the PostgreSQL lock
		// (lock.Lock when LEADER_LOCK resolves to postgres: digest.go) and a check named "postgres".
		// Every replica shares the database: its check degrades readiness and never
		// withdraws it (no health.Gating), so a PostgreSQL blip does not take the
		// whole fleet out of the load balancer; the same holds for Redis and Kafka.
		opts = append(opts, pgfx.Module(pgfx.ModuleConfig{URL: b.databaseURL.Reveal(), NoLock: b.leaderLock != "postgres"}))
	}
	return fx.Options(opts...)
}
