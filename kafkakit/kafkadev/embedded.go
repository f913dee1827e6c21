package kafkadev

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/servicewright/servicewright/fault"
)

// EmbeddedConfig describes an embedded cluster. The zero value is one broker on a
// free loopback port with no topic.
type EmbeddedConfig struct {
	// Brokers is how many brokers the cluster runs, each on its own port. Default 1:
	// one broker leads every partition and coordinates every group.
	Brokers int

	// Ports makes the brokers listen on these loopback ports instead of free ones,
	// one broker per port (it overrides Brokers). A port of 0 picks a free one.
	// Starting again on the same port is how a test brings a broker back.
	Ports []int

	// Topics are created, with the given number of partitions (at least 1), before
	// NewEmbedded returns.
	Topics map[string]int

	// AutoCreateTopics lets metadata requests that ask for it create missing topics,
	// as a broker with auto.create.topics.enable=true does. Off by default, so a
	// client that names a missing topic sees UNKNOWN_TOPIC_OR_PARTITION.
	AutoCreateTopics bool
}

// resolve fills in the defaults and records every problem in l, each under its
// field's name.
func (c EmbeddedConfig) resolve(l *fault.Problems) EmbeddedConfig {
	c.Brokers = cmp.Or(c.Brokers, 1)
	if c.Brokers < 0 {
		l.Addf("Brokers", "must not be negative, got %d", c.Brokers)
	}
	for i, p := range c.Ports {
		if p < 0 || p > 65535 {
			l.Addf("Ports["+strconv.Itoa(i)+"]", "must be a port from 0 to 65535, got %d", p)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Topics)) {
		if n := c.Topics[name]; n < 1 || n > 1<<20 {
			l.Addf("Topics["+strconv.Quote(name)+"]", "partitions must be from 1 to %d, got %d", 1<<20, n)
		}
	}
	return c
}

// Embedded is an in-process Kafka cluster (github.com/twmb/franz-go/pkg/kfake) that
// speaks the real wire protocol over TCP on 127.0.0.1, so any client — kafka-go,
// franz-go, kcat — can use it. Data lives in memory and is gone after Close. It needs
// no binary. Its methods are safe for concurrent use.
type Embedded struct {
	cluster   *kfake.Cluster
	brokers   []string
	closeOnce sync.Once
}

// adminTimeout bounds one administrative request (topic creation) to the cluster.
const adminTimeout = 10 * time.Second

// NewEmbedded checks cfg, starts the cluster and returns once it accepts
// connections, with cfg.Topics created. Call Close to stop it. A bad cfg is a
// *fault.ConfigError naming each field; a port in use is an error.
func NewEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	var l fault.Problems
	cfg = cfg.resolve(&l)
	if err := l.Err(); err != nil {
		return nil, err
	}
	kopts := []kfake.Opt{kfake.NumBrokers(cfg.Brokers)}
	if len(cfg.Ports) > 0 {
		kopts = append(kopts, kfake.Ports(cfg.Ports...))
	}
	if cfg.AutoCreateTopics {
		kopts = append(kopts, kfake.AllowAutoTopicCreation())
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Topics)) {
		kopts = append(kopts, kfake.SeedTopics(int32(cfg.Topics[name]), name))
	}
	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafkadev: embedded broker: %w", err)
	}
	return &Embedded{cluster: cluster, brokers: cluster.ListenAddrs()}, nil
}

// Brokers returns the brokers' "127.0.0.1:PORT" addresses, the bootstrap list for a
// client.
func (e *Embedded) Brokers() []string { return slices.Clone(e.brokers) }

// Addr returns the first broker's address, for clients that take only one (kcat -b).
func (e *Embedded) Addr() string { return e.brokers[0] }

// CreateTopic creates a topic with the given number of partitions (at least 1),
// through the CreateTopics API as any client would. Creating a topic that exists is
// an error wrapping kafka.TopicAlreadyExists.
func (e *Embedded) CreateTopic(name string, partitions int) error {
	if partitions < 1 {
		return fmt.Errorf("kafkadev: create topic %q: partitions must be at least 1, got %d", name, partitions)
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	// A Transport of its own, closed after the request: kafka.DefaultTransport would
	// keep idle connections (and their goroutines) alive.
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(e.brokers...), Transport: transport}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: name, NumPartitions: partitions, ReplicationFactor: 1}},
	})
	if err == nil {
		err = resp.Errors[name]
	}
	if err != nil {
		return fmt.Errorf("kafkadev: create topic %q: %w", name, err)
	}
	return nil
}

// Close stops the cluster: its listeners close and its data is dropped. Clients
// still connected see their requests fail. Closing twice does nothing.
func (e *Embedded) Close() { e.closeOnce.Do(e.cluster.Close) }
