package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/host"
)

// Order is the example's one entity. Deliveries counts how many times it was handled,
// so a message handled twice stays visible.
type Order struct {
	ID         string `json:"id"`
	Item       string `json:"item"`
	Qty        int    `json:"qty"`
	Deliveries int    `json:"deliveries"`
}

func (o Order) validate() error {
	switch {
	case o.ID == "":
		return errors.New("id is required")
	case o.Item == "":
		return errors.New("item is required")
	case o.Qty <= 0:
		return errors.New("qty must be positive")
	}
	return nil
}

// store keeps orders. Handle is an idempotent upsert that counts deliveries.
type store interface {
	Handle(ctx context.Context, o Order) error
	Get(ctx context.Context, id string) (Order, bool, error)
}

// memStore is the embedded default.
type memStore struct {
	mu     sync.Mutex
	orders map[string]Order
}

func (m *memStore) Handle(_ context.Context, o Order) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.orders[o.ID]
	o.Deliveries = prev.Deliveries + 1
	m.orders[o.ID] = o
	return nil
}

func (m *memStore) Get(_ context.Context, id string) (Order, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	return o, ok, nil
}

// pgStore keeps orders in PostgreSQL when DATABASE_URL is set.
type pgStore struct{ pool *pgxpool.Pool }

const ordersDDL = `CREATE TABLE IF NOT EXISTS orders (
	id text PRIMARY KEY, item text NOT NULL, qty int NOT NULL, deliveries int NOT NULL DEFAULT 0)`

func (s pgStore) Handle(ctx context.Context, o Order) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO orders (id, item, qty, deliveries) VALUES ($1, $2, $3, 1)
		ON CONFLICT (id) DO UPDATE SET item = EXCLUDED.item, qty = EXCLUDED.qty, deliveries = orders.deliveries + 1`,
		o.ID, o.Item, o.Qty)
	return err
}

func (s pgStore) Get(ctx context.Context, id string) (Order, bool, error) {
	var o Order
	err := s.pool.QueryRow(ctx, `SELECT id, item, qty, deliveries FROM orders WHERE id = $1`, id).
		Scan(&o.ID, &o.Item, &o.Qty, &o.Deliveries)
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, false, nil
	}
	return o, err == nil, err
}

type storeParams struct {
	fx.In
	Pool *pgxpool.Pool `optional:"true"`
}

// storeModule provides the store: PostgreSQL when there is a pool (its table is
// created by a warmup step), memory otherwise.
func storeModule() fx.Option {
	return fx.Options(
		fx.Provide(func(s store) *orders { return &orders{store: s, submit: s.Handle} }),
		fx.Provide(func(p storeParams) store {
			if p.Pool != nil {
				return pgStore{p.Pool}
			}
			return &memStore{orders: map[string]Order{}}
		}),
		host.Warmup(func(s store) host.Step {
			return host.Step{Name: "orders-schema", Marks: migrationMarks, Start: func(ctx context.Context) error {
				pg, ok := s.(pgStore)
				if !ok {
					return nil
				}
				if err := migrate(ctx, pg.pool, ordersDDL); err != nil {
					return fmt.Errorf("create table orders: %w", err)
				}
				return nil
			}}
		}),
	)
}

// migrate runs ddl in one transaction under a PostgreSQL advisory lock, so replicas
// starting together apply it one at a time instead of racing on CREATE TABLE IF NOT
// EXISTS (which fails under concurrency). Each replica still runs it: it is idempotent,
// and no replica serves before its schema exists.
func migrate(ctx context.Context, pool *pgxpool.Pool, ddl string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7272001)`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, ddl); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// migrationMarks: a schema change touches shared state, and migrate guards it.
var migrationMarks = fleet.Marks{MutatesSharedState: true, SingletonGuarded: true}
