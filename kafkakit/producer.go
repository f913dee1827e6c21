package kafkakit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/fault"
)

// Defaults for the zero fields of a ProducerConfig; a caller that bounds its own
// answer by the write timeout reads it from Producer.Config.
const (
	defaultWriteTimeout = 3 * time.Second
	defaultBatchTimeout = 10 * time.Millisecond
	defaultIdleTimeout  = 30 * time.Second
)

// ErrWriteTimeout is wrapped by WriteMessages' error when the brokers did not
// acknowledge the write within ProducerConfig.WriteTimeout.
var ErrWriteTimeout = errors.New("kafkakit: write timed out")

// ProducerConfig describes a Producer. Zero fields take the default each field's doc states.
type ProducerConfig struct {
	// Brokers is the bootstrap list, each "host:port". Required.
	Brokers []string

	// Topic makes every message go to Topic; messages must then leave their Topic
	// empty. Without it each message names its own topic.
	Topic string

	// WriteTimeout bounds each WriteMessages call, from the call to the brokers'
	// acknowledgement: dial, metadata, produce and retries included. Default 3s. An
	// HTTP handler that produces can thus answer within it, 503 when the brokers are
	// gone. It also bounds kafka-go's own dial, read and write timeouts, so that a
	// write given up on does not linger much longer in the background.
	WriteTimeout time.Duration

	// BatchTimeout is how long a partial batch waits for more messages before it is
	// sent. Default 10ms.
	BatchTimeout time.Duration
}

// resolve fills in the defaults and records every problem in l, each under its
// field's name.
func (c ProducerConfig) resolve(l *fault.Problems) ProducerConfig {
	c.WriteTimeout = cmp.Or(c.WriteTimeout, defaultWriteTimeout)
	c.BatchTimeout = cmp.Or(c.BatchTimeout, defaultBatchTimeout)
	c.Brokers = slices.Clone(c.Brokers)

	if len(c.Brokers) == 0 {
		l.Addf("Brokers", "must list at least one broker")
	}
	for i, b := range c.Brokers {
		if reason := CheckBroker(b); reason != "" {
			l.Addf("Brokers["+strconv.Itoa(i)+"]", "%s", reason)
		}
	}
	if c.WriteTimeout < 0 {
		l.Addf("WriteTimeout", "must not be negative, got %v", c.WriteTimeout)
	}
	if c.BatchTimeout < 0 {
		l.Addf("BatchTimeout", "must not be negative, got %v", c.BatchTimeout)
	}
	return c
}

// Producer writes messages to Kafka: every write waits for all in-sync replicas
// (kafka.RequireAll), messages with the same key go to the same partition
// (kafka.Hash; messages without a key are spread round robin), and every write is
// bounded by WriteTimeout. Its methods are safe for concurrent use. Make one with
// NewProducer and Close it when done.
type Producer struct {
	cfg     ProducerConfig
	w       *kafka.Writer
	o       options
	tracer  trace.Tracer
	metrics *producerMetrics // nil without a registry (WithTelemetry)

	wg        sync.WaitGroup // writes in progress, some perhaps given up on
	closeOnce sync.Once
	closeErr  error
}

// NewProducer checks cfg and returns a Producer. It connects to nothing; the first
// write does. Every problem is reported at once in a *fault.ConfigError naming each
// field; a registry (WithTelemetry) that holds other collectors under the producer's
// metric names is an error too.
func NewProducer(cfg ProducerConfig, opts ...Option) (*Producer, error) {
	o := newOptions(opts)
	var l fault.Problems
	cfg = cfg.resolve(&l)
	if err := l.Err(); err != nil {
		return nil, err
	}
	m, err := newProducerMetrics(o.registerer)
	if err != nil {
		return nil, err
	}
	dialer := &kafka.Dialer{DualStack: true, ClientID: "servicewright"}
	if o.dialer != nil {
		d := *o.dialer
		dialer = &d
	}
	if dialer.Timeout == 0 || dialer.Timeout > cfg.WriteTimeout {
		dialer.Timeout = cfg.WriteTimeout
	}
	// The deprecated constructor is the only one whose Writer owns its Transport,
	// so that Close releases the connections.
	w := kafka.NewWriter(kafka.WriterConfig{
		Brokers:         cfg.Brokers,
		Topic:           cfg.Topic,
		Dialer:          dialer,
		IdleConnTimeout: defaultIdleTimeout,
		ReadTimeout:     cfg.WriteTimeout,
		WriteTimeout:    cfg.WriteTimeout,
		MaxAttempts:     3,
	})
	w.Balancer = &kafka.Hash{}
	w.RequiredAcks = kafka.RequireAll
	w.BatchTimeout = cfg.BatchTimeout
	return &Producer{cfg: cfg, w: w, o: o, tracer: o.tracerProvider.Tracer(instrumentation), metrics: m}, nil
}

// instrumentation names this package's tracer.
const instrumentation = "github.com/servicewright/servicewright/kafkakit"

// Config returns the configuration with defaults applied.
func (p *Producer) Config() ProducerConfig {
	c := p.cfg
	c.Brokers = slices.Clone(c.Brokers)
	return c
}

// WriteMessages writes msgs and returns once the brokers acknowledged them all.
// Steps: it starts a producer span ("send <topic>") under ctx's span, injects the
// trace context into each message's headers (replacing headers of the same keys),
// and hands the messages to kafka-go.
//
// It returns when ctx is done or WriteTimeout has passed, whichever comes first,
// with an error wrapping ErrWriteTimeout (or ctx's error): then some of the messages
// may still be written in the background — kafka-go does not honour ctx everywhere —
// so a retry can produce a duplicate. It does not retry beyond kafka-go's own
// attempts (3 within WriteTimeout). msgs' headers are modified in place.
func (p *Producer) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	ctx, span := p.startSpan(ctx, msgs)
	for i := range msgs {
		p.o.propagator.Inject(ctx, HeaderCarrier{Headers: &msgs[i].Headers})
	}
	began := time.Now()
	err := p.write(ctx, msgs)
	p.metrics.observe(p.topic(msgs), len(msgs), time.Since(began), err)
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, "write failed")
	}
	span.End()
	return err
}

// topic is where msgs go: the Producer's Topic, or the first message's.
func (p *Producer) topic(msgs []kafka.Message) string {
	if p.cfg.Topic != "" {
		return p.cfg.Topic
	}
	return msgs[0].Topic
}

func (p *Producer) startSpan(ctx context.Context, msgs []kafka.Message) (context.Context, trace.Span) {
	topic := p.topic(msgs)
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKafka, semconv.MessagingOperationTypeSend, semconv.MessagingDestinationName(topic),
	}
	if len(msgs) > 1 {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(len(msgs)))
	}
	return p.tracer.Start(ctx, "send "+topic, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
}

// write runs kafka-go's write in a goroutine the Producer tracks, and waits for it
// at most until WriteTimeout or ctx.
func (p *Producer) write(ctx context.Context, msgs []kafka.Message) error {
	wctx, cancel := context.WithTimeout(ctx, p.cfg.WriteTimeout)
	defer cancel()
	done := make(chan error, 1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		done <- p.w.WriteMessages(wctx, msgs...)
	}()
	select {
	case err := <-done:
		if err != nil && wctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("%w after %v: %w", ErrWriteTimeout, p.cfg.WriteTimeout, err)
		}
		return err
	case <-wctx.Done():
		if ctx.Err() != nil {
			return fmt.Errorf("kafka write: %w", ctx.Err())
		}
		return fmt.Errorf("%w after %v", ErrWriteTimeout, p.cfg.WriteTimeout)
	}
}

// Close flushes what is pending and closes the producer's connections. It waits for
// the writes in progress (those given up on included) and for kafka-go's Close, in
// all at most WriteTimeout; beyond that they are abandoned and Close returns an
// error saying so. A second Close returns the first one's error.
func (p *Producer) Close() error {
	p.closeOnce.Do(func() {
		errc := make(chan error, 1)
		go func() {
			p.wg.Wait()
			errc <- p.w.Close()
		}()
		t := time.NewTimer(p.cfg.WriteTimeout)
		defer t.Stop()
		select {
		case p.closeErr = <-errc:
		case <-t.C:
			p.closeErr = fmt.Errorf("kafka producer close: abandoned after %v", p.cfg.WriteTimeout)
		}
	})
	return p.closeErr
}
