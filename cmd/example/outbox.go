package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/outbox"
)

// readOutbox reads ORDERS_OUTBOX, a boolean: when true, POST /orders goes through the
// transactional outbox (outboxModule). It needs DATABASE_URL.
func readOutbox(b backends, l *fault.Problems) bool {
	v := os.Getenv("ORDERS_OUTBOX")
	if v == "" {
		return false
	}
	on, err := strconv.ParseBool(v)
	switch {
	case err != nil:
		l.Addf("ORDERS_OUTBOX", "must be true or false, got %q", v)
	case on && b.databaseURL == "":
		l.Addf("ORDERS_OUTBOX", "needs DATABASE_URL: the outbox is a table beside the orders")
	}
	return on
}

// outboxModule makes POST /orders commit the order (deliveries 0) and its event in
// one transaction, so that an answered order is never lost on its way to Kafka and a
// refused one (503: the database is down) left nothing behind. The relay
// "orders-relay", on every replica, publishes the events; the consumer handles each
// event once, its effect and the inbox record in one transaction (handleOnce).
func outboxModule() fx.Option {
	return fx.Options(
		fx.Provide(func() (*outbox.Outbox, *outbox.Inbox, error) {
			box, err := outbox.New("ORDERS_OUTBOX", "")
			if err != nil {
				return nil, nil, err
			}
			in, err := outbox.NewInbox("ORDERS_OUTBOX", "")
			return box, in, err
		}),
		// The tables exist before Bind, where the relay verifies its own.
		hostfx.Warmup(func(pool *pgxpool.Pool, box *outbox.Outbox, in *outbox.Inbox) host.Step {
			return host.Step{Name: "outbox-schema", Marks: migrationMarks, Start: func(ctx context.Context) error {
				if err := migrate(ctx, pool, box.Schema()+"\n"+in.Schema()); err != nil {
					return fmt.Errorf("create the outbox and inbox tables: %w", err)
				}
				return nil
			}}
		}),
		fx.Decorate(func(o *orders, pool *pgxpool.Pool, box *outbox.Outbox) *orders {
			o.submit = func(ctx context.Context, ord Order) error {
				v, err := json.Marshal(ord)
				if err != nil {
					return err
				}
				return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `INSERT INTO orders (id, item, qty, deliveries) VALUES ($1, $2, $3, 0)
						ON CONFLICT (id) DO UPDATE SET item = EXCLUDED.item, qty = EXCLUDED.qty`, ord.ID, ord.Item, ord.Qty); err != nil {
						return err
					}
					return box.Write(ctx, tx, outbox.Event{Topic: ordersTopic, Key: ord.ID, Value: v})
				})
			}
			o.retryAfter = "1"
			return o
		}),
		// The relay's producer names no topic (each event names its own) and is closed
		// after the entrypoints stopped.
		hostfx.Provide(host.Registration{Order: 25}, func(lc fx.Lifecycle, brokers []string, pool *pgxpool.Pool, box *outbox.Outbox,
			tp trace.TracerProvider, reg prometheus.Registerer) (*outbox.Relay, error) {
			p, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: brokers},
				kafkakit.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp, Registerer: reg}))
			if err != nil {
				return nil, err
			}
			lc.Append(fx.StopHook(p.Close))
			return outbox.NewRelay(box, pool, p, outbox.RelayConfig{Name: "orders-relay"})
		}),
	)
}

// inboxParams are what handleOnce needs; absent without ORDERS_OUTBOX.
type inboxParams struct {
	fx.In
	Inbox *outbox.Inbox `optional:"true"`
	Pool  *pgxpool.Pool `optional:"true"`
}

// handleOnce handles an order event through the inbox: the order's upsert and the
// event's id are committed together, so a redelivered event (a relay that published
// it twice, a consumer that did not commit its offset) changes nothing. Messages
// without an event id (produced by anything but the relay) go to plain.
func handleOnce(p inboxParams, plain kafkaentry.Handler, delay func(context.Context) error) kafkaentry.Handler {
	return func(ctx context.Context, msg kafka.Message) error {
		if outbox.EventID(msg) == "" {
			return plain(ctx, msg)
		}
		if err := delay(ctx); err != nil {
			return err
		}
		var o Order
		if err := json.Unmarshal(msg.Value, &o); err != nil {
			return fmt.Errorf("%w: %v", kafkaentry.ErrUndecodable, err)
		}
		if err := o.validate(); err != nil {
			return fmt.Errorf("%w: %v", kafkaentry.ErrUndecodable, err)
		}
		return p.Inbox.Handle(ctx, p.Pool, msg, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, handleSQL, o.ID, o.Item, o.Qty)
			return err
		})
	}
}
