// Package kafkabroker runs an in-process Kafka-protocol cluster (kfake) on loopback
// TCP: the embedded broker of the example service and of the tests. Clients speak
// the real wire protocol to it; nothing is persisted.
package kafkabroker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Option changes how Start starts the cluster.
type Option func(*kafkaConfig)

type kafkaConfig struct {
	brokers   int
	ports     []int
	topics    map[string]int
	autoTopic bool
}

// BrokerCount sets how many brokers the cluster runs, each on its own port. The
// default is 1: one broker leads every partition and coordinates every group.
func BrokerCount(n int) Option { return func(c *kafkaConfig) { c.brokers = n } }

// Ports makes the brokers listen on these loopback ports instead of free ones,
// one broker per port (it overrides BrokerCount). A port of 0 picks a free one.
func Ports(ports ...int) Option {
	return func(c *kafkaConfig) { c.ports = append([]int(nil), ports...) }
}

// Topic creates topic with the given number of partitions (at least 1) when
// the cluster starts. It may be given several times.
func Topic(name string, partitions int) Option {
	return func(c *kafkaConfig) { c.topics[name] = partitions }
}

// AutoCreateTopics lets metadata requests that ask for it create missing topics,
// as a broker with auto.create.topics.enable=true does. It is off by default, so a
// client that names a missing topic sees UNKNOWN_TOPIC_OR_PARTITION.
func AutoCreateTopics() Option { return func(c *kafkaConfig) { c.autoTopic = true } }

// Kafka is an in-process Kafka cluster (github.com/twmb/franz-go/pkg/kfake) that
// speaks the real wire protocol over TCP on 127.0.0.1, so any client — kafka-go,
// franz-go, kcat — can use it. Data lives in memory and is gone after Close. Its
// methods are safe for concurrent use.
//
// Unlike Redis and PostgreSQL it needs no binary, so Start never returns an
// error wrapping ErrMissing; it runs anywhere the tests run, and an example service
// may embed it when no real broker is configured.
type Cluster struct {
	cluster *kfake.Cluster
	brokers []string

	closeOnce sync.Once
}

// kafkaAdminTimeout bounds one administrative request (topic creation) to the cluster.
const kafkaAdminTimeout = 10 * time.Second

// Start starts an in-process Kafka cluster listening on loopback ports and
// returns once it accepts connections. Topics given with Topic exist by then.
// Call Close to stop it.
func Start(opts ...Option) (*Cluster, error) {
	cfg := kafkaConfig{brokers: 1, topics: map[string]int{}}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.brokers < 1 && len(cfg.ports) == 0 {
		return nil, fmt.Errorf("testenv: kafka: BrokerCount must be at least 1, got %d", cfg.brokers)
	}
	kopts := []kfake.Opt{kfake.NumBrokers(cfg.brokers)}
	if len(cfg.ports) > 0 {
		kopts = append(kopts, kfake.Ports(cfg.ports...))
	}
	if cfg.autoTopic {
		kopts = append(kopts, kfake.AllowAutoTopicCreation())
	}
	for name, partitions := range cfg.topics {
		if partitions < 1 {
			return nil, fmt.Errorf("testenv: kafka: topic %q: partitions must be at least 1, got %d", name, partitions)
		}
		kopts = append(kopts, kfake.SeedTopics(int32(partitions), name))
	}
	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("testenv: kafka: %w", err)
	}
	return &Cluster{cluster: cluster, brokers: cluster.ListenAddrs()}, nil
}

// Brokers returns the brokers' "127.0.0.1:PORT" addresses, the bootstrap list for
// a client.
func (k *Cluster) Brokers() []string { return append([]string(nil), k.brokers...) }

// Addr returns the first broker's address, for clients that take only one (kcat -b).
func (k *Cluster) Addr() string { return k.brokers[0] }

// CreateTopic creates a topic with the given number of partitions (at least 1),
// through the CreateTopics API as any client would. Creating a topic that exists
// is an error wrapping kafka.TopicAlreadyExists.
func (k *Cluster) CreateTopic(name string, partitions int) error {
	if partitions < 1 {
		return fmt.Errorf("testenv: kafka: create topic %q: partitions must be at least 1, got %d", name, partitions)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaAdminTimeout)
	defer cancel()
	// A Transport of our own, closed after the request: kafka.DefaultTransport would
	// keep idle connections (and their goroutines) alive past the test.
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(k.brokers...), Transport: transport}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: name, NumPartitions: partitions, ReplicationFactor: 1}},
	})
	if err == nil {
		err = resp.Errors[name]
	}
	if err != nil {
		return fmt.Errorf("testenv: kafka: create topic %q: %w", name, err)
	}
	return nil
}

// Close stops the cluster: its listeners close and its data is dropped. Clients
// still connected see their requests fail. Closing twice does nothing.
func (k *Cluster) Close() {
	k.closeOnce.Do(k.cluster.Close)
}
