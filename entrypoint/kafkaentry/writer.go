package kafkaentry

import (
	"time"

	"github.com/segmentio/kafka-go"
)

// Writer defaults.
const (
	DefaultWriterBatchTimeout = 10 * time.Millisecond
	defaultWriterIdleTimeout  = 30 * time.Second
)

// A WriterOption configures NewWriter.
type WriterOption func(*writerConfig)

type writerConfig struct {
	topic        string
	batchTimeout time.Duration
	dialer       *kafka.Dialer
}

// WriterTopic makes every message go to topic; messages must then leave Topic empty.
// Without it each message names its own topic.
func WriterTopic(topic string) WriterOption { return func(c *writerConfig) { c.topic = topic } }

// WriterBatchTimeout sets how long a partial batch waits for more messages before it
// is sent. Default DefaultWriterBatchTimeout.
func WriterBatchTimeout(d time.Duration) WriterOption {
	return func(c *writerConfig) {
		if d > 0 {
			c.batchTimeout = d
		}
	}
}

// WriterDialer sets the dialer (TLS, SASL, client ID, timeout) of the writer's
// connections.
func WriterDialer(d *kafka.Dialer) WriterOption {
	return func(c *writerConfig) { c.dialer = d }
}

// NewWriter returns a producer for brokers with safe defaults: every write waits for
// all in-sync replicas (kafka.RequireAll), messages with the same key go to the same
// partition (kafka.Hash, FNV-1a on the key; messages without a key are spread round
// robin), and a batch waits at most 10ms for more messages. WriteMessages is
// synchronous. The dead-letter path uses it; a service can use it to produce.
//
// Close the writer when done: Close flushes what is pending and also closes the
// writer's idle connections. (A *kafka.Writer made as a struct literal does not: its
// Transport, or kafka.DefaultTransport, keeps them and their goroutines.)
func NewWriter(brokers []string, opts ...WriterOption) *kafka.Writer {
	cfg := writerConfig{batchTimeout: DefaultWriterBatchTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if len(brokers) == 0 {
		// kafka.NewWriter panics without brokers; this writer fails each write instead.
		return &kafka.Writer{Addr: kafka.TCP(), Topic: cfg.topic, Transport: &kafka.Transport{}}
	}
	// The deprecated constructor is the only one whose Writer owns its Transport,
	// so that Close releases the connections.
	w := kafka.NewWriter(kafka.WriterConfig{
		Brokers:         brokers,
		Topic:           cfg.topic,
		Dialer:          cfg.dialer,
		IdleConnTimeout: defaultWriterIdleTimeout,
	})
	w.Balancer = &kafka.Hash{}
	w.RequiredAcks = kafka.RequireAll
	w.BatchTimeout = cfg.batchTimeout
	return w
}
