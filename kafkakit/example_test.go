package kafkakit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

// An embedded broker for local development, and a producer whose writes are bounded
// by WriteTimeout.
func Example() {
	broker, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Topics: map[string]int{"orders": 3}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer broker.Close()

	producer, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: broker.Brokers(), Topic: "orders"})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = producer.WriteMessages(context.Background(), kafka.Message{Key: []byte("o1"), Value: []byte(`{"id":"o1"}`)})
	fmt.Println("written:", err == nil)
	_ = producer.Close()

	broker.Close() // the broker is gone: the next write fails within WriteTimeout
	producer, _ = kafkakit.NewProducer(kafkakit.ProducerConfig{
		Brokers: broker.Brokers(), Topic: "orders", WriteTimeout: 500 * time.Millisecond})
	err = producer.WriteMessages(context.Background(), kafka.Message{Value: []byte("x")}) // returns by WriteTimeout
	fmt.Println("failed:", err != nil)
	_ = producer.Close()
	// Output:
	// written: true
	// failed: true
}
