package kafkadev_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEmbedded(t *testing.T) {
	t.Run("bad topics and ports are one ConfigError naming each", func(t *testing.T) {
		_, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Topics: map[string]int{"t": 0}, Ports: []int{70000}})
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok || len(ce.Problems) != 2 {
			t.Fatalf("NewEmbedded = %v, want a *fault.ConfigError with two problems", err)
		}
	})

	t.Run("a client speaks the wire protocol to it", func(t *testing.T) {
		b, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Topics: map[string]int{"orders": 2}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		conn, err := kafka.DialContext(ctx, "tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		parts, err := conn.ReadPartitions("orders")
		if err != nil || len(parts) != 2 {
			t.Fatalf("partitions of orders: %v, %v; want 2", parts, err)
		}
	})
}
