package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/internal/kafkabroker"
)

const (
	ordersTopic = "orders"
	deadLetters = "orders.dlq"
)

// readBrokers parses KAFKA_BROKERS ("host:port,host:port"); empty means embedded.
func readBrokers(v string, l *fault.Problems) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var out []string
	for _, b := range strings.Split(v, ",") {
		b = strings.TrimSpace(b)
		host, port, err := net.SplitHostPort(b)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || host == "" || n <= 0 || n > 65535 {
			l.Addf("KAFKA_BROKERS", "%q is not host:port", b)
			continue
		}
		out = append(out, b)
	}
	return out
}

// kafkaModule consumes topic "orders" into the store and gives POST /orders a
// producer. Without KAFKA_BROKERS it runs an embedded broker, opened with the
// container and closed after every entrypoint has stopped.
func kafkaModule(brokers []string) fx.Option {
	embedded := len(brokers) == 0
	return fx.Options(
		fx.Provide(func(lc fx.Lifecycle, log *zap.Logger) ([]string, error) {
			if !embedded {
				return brokers, nil
			}
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			var cluster *kafkabroker.Cluster
			lc.Append(fx.Hook{
				OnStart: func(context.Context) error {
					cluster, err = kafkabroker.Start(kafkabroker.Ports(port),
						kafkabroker.Topic(ordersTopic, 3), kafkabroker.Topic(deadLetters, 1))
					if err == nil {
						log.Info("KAFKA_BROKERS is unset: running an embedded Kafka-protocol broker", zap.String("addr", addr))
					}
					return err
				},
				OnStop: func(context.Context) error { cluster.Close(); return nil },
			})
			return []string{addr}, nil
		}),
		fx.Provide(func(lc fx.Lifecycle, brokers []string) *kafka.Writer {
			w := kafkaentry.NewWriter(brokers, kafkaentry.WriterTopic(ordersTopic))
			lc.Append(fx.StopHook(w.Close))
			return w
		}),
		fx.Decorate(func(o *orders, w *kafka.Writer) *orders {
			o.submit = func(ctx context.Context, ord Order) error {
				v, err := json.Marshal(ord)
				if err != nil {
					return err
				}
				return w.WriteMessages(ctx, kafka.Message{Key: []byte(ord.ID), Value: v})
			}
			return o
		}),
		host.Provide(func(brokers []string, s store, log *zap.Logger, reg prometheus.Registerer) (*kafkaentry.Consumer, error) {
			return kafkaentry.New(kafkaentry.Config{
				Name:             "orders-consumer",
				Brokers:          brokers,
				GroupID:          "orders",
				Topics:           []string{ordersTopic},
				OnFailure:        kafkaentry.DeadLetter(deadLetters),
				AutoCreateTopics: !embedded,
			}, handleOrder(s), kafkaentry.WithLogger(log), kafkaentry.WithRegisterer(reg))
		}, 20),
		host.Check("kafka", func(c *kafkaentry.Consumer) health.Check { return c }),
	)
}

// handleOrder stores one order message; one that cannot be decoded goes to the
// dead-letter topic at once, so it never blocks its partition.
func handleOrder(s store) kafkaentry.Handler {
	return func(ctx context.Context, msg kafka.Message) error {
		var o Order
		if err := json.Unmarshal(msg.Value, &o); err != nil {
			return fmt.Errorf("%w: %v", kafkaentry.ErrUndecodable, err)
		}
		if err := o.validate(); err != nil {
			return fmt.Errorf("%w: %v", kafkaentry.ErrUndecodable, err)
		}
		return s.Handle(ctx, o)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
