package kafkaentry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/kafkakit"
)

// A consumer of "orders" that dead-letters what it cannot decode, driven by hand
// the way the Host drives it: Bind, Serve, stop, Drain, Stop.
func Example() {
	_ = broker.CreateTopic("example-orders", 1)
	_ = broker.CreateTopic("example-orders.dlq", 1)

	handled := make(chan string, 2)
	handle := func(ctx context.Context, msg kafka.Message) error {
		if string(msg.Value) == "not json" {
			return fmt.Errorf("decode order: %w", kafkaentry.ErrUndecodable)
		}
		handled <- string(msg.Value)
		return nil
	}
	c, err := kafkaentry.New(kafkaentry.Config{
		Name:      "orders",
		Brokers:   broker.Brokers(),
		GroupID:   "example",
		Topics:    []string{"example-orders"},
		OnFailure: kafkaentry.DeadLetter("example-orders.dlq"),
	}, handle)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := c.Bind(ctx); err != nil {
		fmt.Println(err)
		return
	}
	stop, served := make(chan struct{}), make(chan error, 1)
	go func() { served <- c.Serve(ctx, stop) }()

	w, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: broker.Brokers(), Topic: "example-orders"})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = w.WriteMessages(ctx, kafka.Message{Value: []byte(`{"id":1}`)}, kafka.Message{Value: []byte("not json")},
		kafka.Message{Value: []byte(`{"id":2}`)})
	_ = w.Close()
	fmt.Println("handled", <-handled)
	fmt.Println("handled", <-handled)

	close(stop)
	drainCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = errors.Join(<-served, c.Drain(drainCtx), c.Stop(ctx))
	st := c.Stats()
	fmt.Printf("err=%v handled=%d dead-lettered=%d uncommitted=%d\n", err, st.Handled, st.DeadLettered, st.Uncommitted)
	// Output:
	// handled {"id":1}
	// handled {"id":2}
	// err=<nil> handled=2 dead-lettered=1 uncommitted=0
}
