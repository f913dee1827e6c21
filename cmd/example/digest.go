package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/etcdkit/etcdfx"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/kubekit/kubefx"
	"github.com/servicewright/servicewright/leader"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/rediskit/redisfx"
)

// The digest publisher runs on one replica of the fleet at a time: it holds the
// "digest-publisher" lease and writes a digest every EXAMPLE_PUBLISH_EVERY, passing
// its fencing token with each write, so a paused ex-leader's late writes are refused
// by the store itself.

const digestKey = "digest-publisher"

// digests is a fenced store: Claim takes the token for a term (the stored fence
// must be strictly lower); Write accepts a token equal to or above the fence.
type digests interface {
	Claim(ctx context.Context, token uint64, instance string) (bool, error)
	Write(ctx context.Context, token uint64, instance, body string) (bool, error)
	Fence(ctx context.Context) (uint64, error)
}

type memDigests struct {
	mu    sync.Mutex
	fence uint64
}

func (m *memDigests) Claim(_ context.Context, token uint64, _ string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fence >= token {
		return false, nil
	}
	m.fence = token
	return true, nil
}

func (m *memDigests) Write(_ context.Context, token uint64, _, _ string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return token >= m.fence, nil
}

func (m *memDigests) Fence(context.Context) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fence, nil
}

// pgDigests is the fenced store in PostgreSQL. Every accepted write is also logged
// in digest_log, in the same statement, so what the fence let through can be audited.
type pgDigests struct{ pool *pgxpool.Pool }

const digestsDDL = `
CREATE TABLE IF NOT EXISTS digests (
	name text PRIMARY KEY, body text NOT NULL, fence bigint NOT NULL, instance text NOT NULL,
	written_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS digest_log (
	token bigint NOT NULL, instance text NOT NULL, written_at timestamptz NOT NULL DEFAULT clock_timestamp());
INSERT INTO digests (name, body, fence, instance) VALUES ('orders', '', 0, '') ON CONFLICT DO NOTHING`

func (p pgDigests) Claim(ctx context.Context, token uint64, instance string) (bool, error) {
	tag, err := p.pool.Exec(ctx, `UPDATE digests SET fence = $1, instance = $2 WHERE name = 'orders' AND fence < $1`,
		int64(token), instance)
	return tag.RowsAffected() == 1, err
}

func (p pgDigests) Write(ctx context.Context, token uint64, instance, body string) (bool, error) {
	var written int64
	err := p.pool.QueryRow(ctx, `WITH w AS (
			UPDATE digests SET body = $3, fence = $1, instance = $2, written_at = clock_timestamp()
			WHERE name = 'orders' AND fence <= $1 RETURNING fence, instance)
		INSERT INTO digest_log (token, instance) SELECT fence, instance FROM w RETURNING token`,
		int64(token), instance, body).Scan(&written)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (p pgDigests) Fence(ctx context.Context) (uint64, error) {
	var f int64
	err := p.pool.QueryRow(ctx, `SELECT fence FROM digests WHERE name = 'orders'`).Scan(&f)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("no digests row: %w", lock.ErrFenceOutOfRange)
	}
	return uint64(f), err
}

type leaderParams struct {
	fx.In
	Pool *pgxpool.Pool `optional:"true"`
}

// leaderModule wires the lock, the fenced digest store and the publisher's
// Leadership. The lock is where LEADER_LOCK says (readLeaderLock): Redis, PostgreSQL,
// etcd, a Kubernetes Lease or memory.
func leaderModule(k knobs) fx.Option {
	var lk fx.Option
	switch k.leaderLock {
	case "etcd":
		lk = etcdfx.Module(etcdfx.ModuleConfig{Endpoints: k.etcd.Reveal()})
	case "kubernetes":
		lk = kubefx.Module(kubefx.ModuleConfig{Kubeconfig: k.kubeconfig, Namespace: k.namespace})
	case "redis":
		lk = redisfx.Module(redisfx.ModuleConfig{URL: k.redisURL.Reveal()})
	case "postgres":
		lk = fx.Options() // pgfx.Module, in backends.module, provides it
	default:
		lk = fx.Provide(func() lock.Lock { return lock.NewMemory() })
	}
	return fx.Options(
		lk,
		fx.Provide(func(p leaderParams) digests {
			if p.Pool != nil {
				return pgDigests{p.Pool}
			}
			return &memDigests{}
		}),
		hostfx.Warmup(func(d digests) host.Step {
			pg, _ := d.(pgDigests)
			return host.Step{Name: "digests-schema", Marks: migrationMarks, Backend: poolBackend(pg.pool), Start: func(ctx context.Context) error {
				if pg, ok := d.(pgDigests); ok {
					return migrate(ctx, pg.pool, digestsDDL)
				}
				return nil
			}}
		}),
		// No telemetry option: the Host hands the Leadership its logger, registry and
		// tracer provider (a leadership.term span per term).
		hostfx.Provide(host.Registration{Order: 30}, func(lk lock.Lock, d digests, inst hostfx.Instance, log *zap.Logger) (*leader.Leadership, error) {
			return leader.New(leader.Config{
				Lock:          lk,
				Key:           digestKey,
				Owner:         string(inst),
				TTL:           k.leaderTTL,
				CampaignEvery: k.campaignEvery,
				// The term's exit timings scale with the TTL (2s, 1s, 1s at the
				// default 15s), so a short test TTL gives a short stop.
				YieldGrace:           k.leaderTTL * 2 / 15,
				ReleaseTimeout:       k.leaderTTL / 15,
				Margin:               k.leaderTTL / 15,
				Claim:                func(ctx context.Context, t *leader.Term) (bool, error) { return d.Claim(ctx, t.Token, string(inst)) },
				FenceFloor:           d.Fence,
				RequiresFenceAdvance: true,
			}, publish(d, string(inst), k.publishEvery, log))
		}),
	)
}

// publish is the leader's body: one digest per interval, while the term is live. A
// write the fence refuses means a newer leader has written: the term is over.
func publish(d digests, instance string, every time.Duration, log *zap.Logger) func(context.Context, *leader.Term) error {
	return func(ctx context.Context, term *leader.Term) error {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for n := 1; term.Live(); n++ {
			ok, err := d.Write(ctx, term.Token, instance, fmt.Sprintf("digest #%d by %s", n, instance))
			if err != nil {
				return err
			}
			if !ok {
				log.Warn("digest write refused by the fence: a newer leader has written", zap.Uint64("token", term.Token))
				return nil
			}
			select {
			case <-term.Ended():
				return nil
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
		return nil
	}
}
