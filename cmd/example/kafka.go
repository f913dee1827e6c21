package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/kafkakit"
)

const (
	ordersTopic = "orders"
	deadLetters = "orders.dlq"
)

// readBrokers parses KAFKA_BROKERS ("host:port,host:port"); empty means embedded,
// which only a build with the development broker has (devbroker.go). A bad entry is
// named by its position, never echoed: it may carry credentials.
func readBrokers(v string, l *fault.Problems) []string {
	if strings.TrimSpace(v) == "" {
		if !devBroker {
			l.Addf("KAFKA_BROKERS", "must be set: this binary has no development broker (go build -tags devbroker, as make run does, adds one)")
		}
		return nil
	}
	var out []string
	for i, b := range strings.Split(v, ",") {
		b = strings.TrimSpace(b)
		if reason := kafkakit.CheckBroker(b); reason != "" {
			l.Addf("KAFKA_BROKERS", "entry %d: %s", i+1, reason)
			continue
		}
		out = append(out, b)
	}
	return out
}

// kafkaModule consumes topic "orders" into the store and gives POST /orders a
// producer whose writes are bounded by its WriteTimeout (3s by default). Without
// KAFKA_BROKERS it runs an embedded broker, opened with the container and closed
// after every entrypoint has stopped. Each handling takes handleDelay
// (EXAMPLE_HANDLE_DELAY) first. With useOutbox (ORDERS_OUTBOX), POST /orders goes
// through the transactional outbox instead (outboxModule).
func kafkaModule(brokers []string, handleDelay time.Duration, useOutbox bool) fx.Option {
	embedded := len(brokers) == 0
	submit := fx.Decorate(func(o *orders, p *kafkakit.Producer) *orders {
		o.submit = func(ctx context.Context, ord Order) error {
			v, err := json.Marshal(ord)
			if err != nil {
				return err
			}
			return p.WriteMessages(ctx, kafka.Message{Key: []byte(ord.ID), Value: v})
		}
		o.retryAfter = retryAfter(p.Config().WriteTimeout)
		return o
	})
	if useOutbox {
		submit = outboxModule()
	}
	return fx.Options(
		fx.Provide(func(lc fx.Lifecycle, log *zap.Logger) ([]string, error) {
			if !embedded {
				return brokers, nil
			}
			return embeddedBroker(lc, log)
		}),
		fx.Provide(func(lc fx.Lifecycle, brokers []string, tp trace.TracerProvider, reg prometheus.Registerer) (*kafkakit.Producer, error) {
			p, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: brokers, Topic: ordersTopic},
				kafkakit.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp, Registerer: reg}))
			if err != nil {
				return nil, err
			}
			lc.Append(fx.StopHook(p.Close))
			return p, nil
		}),
		submit,
		// No telemetry option: the Host hands the consumer its logger, registry, tracer
		// provider, propagator and error reporter (dead letters, handler panics).
		hostfx.Provide(host.Registration{Order: 20}, func(brokers []string, s store, in inboxParams) (*kafkaentry.Consumer, error) {
			handle := handleOrder(s, handleDelay)
			if in.Inbox != nil {
				handle = handleOnce(in, handle, func(ctx context.Context) error { return sleep(ctx, handleDelay) })
			}
			return kafkaentry.New(kafkaentry.Config{
				Name:             "orders-consumer",
				Brokers:          brokers,
				GroupID:          "orders",
				Topics:           []string{ordersTopic},
				OnFailure:        kafkaentry.DeadLetter(deadLetters),
				AutoCreateTopics: !embedded,
				// A store outage (PostgreSQL down) pauses consumption: the driver's
				// connection errors are transient to kafkaentry.IsTransient, the default.
			}, handle)
		}),
		hostfx.Check("kafka", func(c *kafkaentry.Consumer) health.Check { return c }),
	)
}

// retryAfter is the Retry-After, in whole seconds, of a 503 for a write that timed
// out after d: a client retries once a write could have timed out again.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}

// handleOrder stores one order message, after delay (honouring ctx); one that cannot
// be decoded or held by the store goes to the dead-letter topic at once, so it never
// blocks its partition.
func handleOrder(s store, delay time.Duration) kafkaentry.Handler {
	return func(ctx context.Context, msg kafka.Message) error {
		if err := sleep(ctx, delay); err != nil {
			return err
		}
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
