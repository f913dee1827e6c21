package kafkakit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

// TestProducerMetrics: writes, messages, latency and batch sizes are counted by topic
// and outcome; a write to a broker gone is a timeout; two producers on one registry
// share the series; a registry holding another collector under a name refuses.
func TestProducerMetrics(t *testing.T) {
	port := freePort(t)
	b, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Ports: []int{port}, Topics: map[string]int{"orders": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	reg := prometheus.NewRegistry()
	cfg := kafkakit.ProducerConfig{Brokers: b.Brokers(), Topic: "orders", WriteTimeout: 500 * time.Millisecond}
	p1, err := kafkakit.NewProducer(cfg, kafkakit.WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	p2, err := kafkakit.NewProducer(cfg, kafkakit.WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	if err != nil {
		t.Fatalf("a second producer on the same registry: %v", err)
	}
	defer p2.Close()
	ctx := context.Background()
	if err := p1.WriteMessages(ctx, kafka.Message{Value: []byte("a")}, kafka.Message{Value: []byte("b")}, kafka.Message{Value: []byte("c")}); err != nil {
		t.Fatal(err)
	}
	if err := p2.WriteMessages(ctx, kafka.Message{Value: []byte("d")}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := p1.WriteMessages(ctx, kafka.Message{Value: []byte("e")}); err == nil {
		t.Fatal("write with the broker gone succeeded")
	}
	want := `
# HELP servicewright_kafka_producer_writes_total WriteMessages calls, by topic and outcome (ok, timeout: not acknowledged within WriteTimeout or the caller's ctx, error).
# TYPE servicewright_kafka_producer_writes_total counter
servicewright_kafka_producer_writes_total{outcome="ok",topic="orders"} 2
servicewright_kafka_producer_writes_total{outcome="timeout",topic="orders"} 1
# HELP servicewright_kafka_producer_messages_total Messages given to WriteMessages, by topic and the outcome of their call.
# TYPE servicewright_kafka_producer_messages_total counter
servicewright_kafka_producer_messages_total{outcome="ok",topic="orders"} 4
servicewright_kafka_producer_messages_total{outcome="timeout",topic="orders"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "servicewright_kafka_producer_writes_total", "servicewright_kafka_producer_messages_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "servicewright_kafka_producer_write_duration_seconds", "servicewright_kafka_producer_batch_messages"); n != 2 {
		t.Errorf("%d latency and batch-size series, want 2 (one each, topic orders)", n)
	}
	var batches float64
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "servicewright_kafka_producer_batch_messages" {
			batches = mf.GetMetric()[0].GetHistogram().GetSampleSum()
		}
	}
	if batches != 5 {
		t.Errorf("batch sizes sum to %v, want 5 (3+1+1)", batches)
	}

	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "servicewright_kafka_producer_writes_total", Help: "other"}))
	if _, err := kafkakit.NewProducer(cfg, kafkakit.WithTelemetry(entrypoint.Telemetry{Registerer: clash})); err == nil {
		t.Error("a registry with another collector under the producer's name was accepted")
	}
}
