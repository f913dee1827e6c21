package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

// Order is the example's one entity. Deliveries counts how many times it was handled,
// so a message handled twice stays visible.
type Order struct {
	ID         string `json:"id"`
	Item       string `json:"item"`
	Qty        int    `json:"qty"`
	Deliveries int    `json:"deliveries"`
}

// Limits of what the store holds: qty is a PostgreSQL int (int32), ids and items are
// text without control characters (PostgreSQL text cannot hold NUL at all).
const (
	maxIDBytes   = 64
	maxItemBytes = 256
	maxQty       = math.MaxInt32
)

// validate checks that the store can hold o; the error names the field.
func (o Order) validate() error {
	switch {
	case o.ID == "":
		return errors.New("id is required")
	case len(o.ID) > maxIDBytes:
		return fmt.Errorf("id must be at most %d bytes", maxIDBytes)
	case !printable(o.ID):
		return errors.New("id must be UTF-8 without control characters")
	case o.Item == "":
		return errors.New("item is required")
	case len(o.Item) > maxItemBytes:
		return fmt.Errorf("item must be at most %d bytes", maxItemBytes)
	case !printable(o.Item):
		return errors.New("item must be UTF-8 without control characters")
	case o.Qty < 1 || o.Qty > maxQty:
		return fmt.Errorf("qty must be from 1 to %d", maxQty)
	}
	return nil
}

// printable reports whether s is valid UTF-8 with no control character.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// orderBody is what POST /orders accepts: Deliveries is the store's, not the client's.
type orderBody struct {
	ID   string `json:"id"`
	Item string `json:"item"`
	Qty  int64  `json:"qty"`
}

// decodeOrder reads exactly one JSON object {"id", "item", "qty"} from r and checks it
// (validate). Its error, meant for a 400, names the offending field: an unknown one,
// one of the wrong type, or one the store cannot hold; trailing data after the object
// is refused.
func decodeOrder(r io.Reader) (Order, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var b orderBody
	if err := dec.Decode(&b); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field == "qty":
			return Order{}, fmt.Errorf("qty must be a whole number from 1 to %d", maxQty)
		case errors.As(err, &te) && te.Field != "":
			return Order{}, fmt.Errorf("%s must be a string", te.Field)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return Order{}, fmt.Errorf("unknown field %s; the body is {\"id\", \"item\", \"qty\"}", strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return Order{}, errors.New(`body must be one JSON object {"id", "item", "qty"}`)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return Order{}, errors.New("body must hold exactly one JSON object, with nothing after it")
	}
	if b.Qty < 1 || b.Qty > maxQty {
		return Order{}, fmt.Errorf("qty must be from 1 to %d", maxQty)
	}
	o := Order{ID: b.ID, Item: b.Item, Qty: int(b.Qty)}
	return o, o.validate()
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

// handleSQL stores one delivery of an order: $1 id, $2 item, $3 qty.
const handleSQL = `INSERT INTO orders (id, item, qty, deliveries) VALUES ($1, $2, $3, 1)
	ON CONFLICT (id) DO UPDATE SET item = EXCLUDED.item, qty = EXCLUDED.qty, deliveries = orders.deliveries + 1`

func (s pgStore) Handle(ctx context.Context, o Order) error {
	_, err := s.pool.Exec(ctx, handleSQL, o.ID, o.Item, o.Qty)
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
		hostfx.Warmup(func(p storeParams) host.Step {
			return host.Step{Name: "orders-schema", Marks: migrationMarks, Start: func(ctx context.Context) error {
				if p.Pool == nil {
					return nil // the memory store needs no schema
				}
				if err := migrate(ctx, p.Pool, ordersDDL); err != nil {
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
