package outbox_test

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/outbox"
)

type order struct {
	ID   string `json:"id"`
	Item string `json:"item"`
}

// Write the order and its event in one transaction; the Relay, registered on every
// replica, publishes the event.
func Example() {
	ctx := context.Background()
	pool, _ := pgxpool.New(ctx, "postgres://localhost/orders")
	producer, _ := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: []string{"localhost:9092"}})
	box, _ := outbox.New("OUTBOX_TABLE", "") // the table "outbox": see Schema
	relay, _ := outbox.NewRelay(box, pool, producer, outbox.RelayConfig{})

	create := func(ctx context.Context, o order) error {
		v, _ := json.Marshal(o)
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO orders (id, item) VALUES ($1, $2)`, o.ID, o.Item); err != nil {
				return err
			}
			return box.Write(ctx, tx, outbox.Event{Topic: "orders", Key: o.ID, Value: v})
		})
	}
	_ = create
	_ = host.Registration{Entrypoint: relay}
}

// The consumer's effect and the event's id commit together: a redelivery changes
// nothing.
func ExampleInbox_Handle() {
	pool, _ := pgxpool.New(context.Background(), "postgres://localhost/shipping")
	inbox, _ := outbox.NewInbox("INBOX_TABLE", "") // the table "inbox": see Schema
	handle := func(ctx context.Context, msg kafka.Message) error {
		return inbox.Handle(ctx, pool, msg, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO shipments (order_id) VALUES ($1)`, string(msg.Key))
			return err
		})
	}
	_ = kafkaentry.Handler(handle)
}
