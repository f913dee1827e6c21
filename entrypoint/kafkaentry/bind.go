package kafkaentry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/internal/wait"
	"github.com/servicewright/servicewright/kafkakit"
)

// errUnknownTopic is wrapped by Bind's error when a topic does not exist and
// AutoCreateTopics is off. The message names the topics. It is not exported: a
// missing topic is a deployment error for a person to read, not one a program handles.
var errUnknownTopic = errors.New("kafkaentry: unknown topic")

// Bind checks that a broker answers (each dial bounded by DialTimeout) and that the
// consumed topics and the dead-letter topic exist — creating the missing ones when
// AutoCreateTopics is set — and then joins the group: it creates the kafka-go
// ConsumerGroup, which joins in the background. From then on the group may assign
// partitions to this member, and a rebalance is answered (the member rejoins), but
// nothing is fetched and no handler runs before Serve. Bind also makes the
// dead-letter writer.
//
// An error leaves nothing open: the Host calls neither Drain nor Stop after a failed
// Bind. A second Bind returns an error wrapping entrypoint.ErrOutOfTurn.
func (c *Consumer) Bind(ctx context.Context) error {
	c.base.Lock()
	defer c.base.Unlock()
	if err := c.base.Bind(); err != nil {
		return err
	}
	addr, err := c.reachable(ctx)
	if err == nil {
		err = c.ensureTopics(ctx, addr)
	}
	var g *kafka.ConsumerGroup
	if err == nil {
		g, err = kafka.NewConsumerGroup(c.groupConfig())
	}
	if err != nil {
		return fmt.Errorf("kafkaentry %q: bind: %w", c.cfg.Name, err)
	}
	c.dlq = c.opts.dlq
	if c.cfg.OnFailure.deadLetter && c.dlq == nil {
		c.ownDLQ, err = kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: c.cfg.Brokers},
			kafkakit.WithDialer(c.dialer), kafkakit.WithTelemetry(entrypoint.Telemetry{Propagator: c.propagator}))
		if err != nil { // the brokers were checked by New
			_ = g.Close()
			return fmt.Errorf("kafkaentry %q: bind: dead-letter producer: %w", c.cfg.Name, err)
		}
		c.dlq = c.ownDLQ
	}
	c.joinLocked(ctx, kafkaGroup{g})
	c.log.Info("bound", zap.Strings("brokers", c.cfg.Brokers), zap.String("group", c.cfg.GroupID),
		zap.Strings("topics", c.cfg.Topics), zap.Stringer("on_failure", c.cfg.OnFailure))
	return nil
}

// Health is the consumer's readiness check. While a partition is paused on a
// dependency outage (see Outage) it returns an error wrapping ErrPaused that names
// the paused partitions, the rule that saw the outage and the kind of error (never
// its message). Otherwise it reports whether a broker answers: it dials the brokers
// at once, each dial bounded by DialTimeout and ctx, and returns nil as soon as one
// of them answers an ApiVersions request, or an error wrapping kafkakit.ErrBrokersUnreachable
// that lists each broker's failure. It may be used before Bind and after Stop; the
// Consumer is thus a health.Check.
func (c *Consumer) Health(ctx context.Context) error {
	if d := c.StatusDetail(); d != "" {
		return fmt.Errorf("kafkaentry %q: %w: %s", c.cfg.Name, ErrPaused, strings.TrimPrefix(d, "paused: "))
	}
	_, err := c.reachable(ctx)
	return err
}

// reachable probes every broker concurrently and returns the first that answers.
func (c *Consumer) reachable(ctx context.Context) (string, error) {
	return kafkakit.Check(c.cfg.Brokers, c.cfg.DialTimeout, kafkakit.WithDialer(c.dialer)).Reachable(ctx)
}

// ensureTopics asks addr for the metadata of every topic the consumer uses and
// creates the missing ones when AutoCreateTopics is set.
func (c *Consumer) ensureTopics(ctx context.Context, addr string) error {
	topics := slices.Clone(c.cfg.Topics)
	if c.cfg.OnFailure.deadLetter {
		topics = append(topics, c.cfg.OnFailure.topic)
	}
	// A Transport of our own, closed after use, so that no idle connection (and its
	// goroutines) outlives Bind.
	transport := &kafka.Transport{
		Dial:     (&net.Dialer{Timeout: c.cfg.DialTimeout}).DialContext,
		TLS:      c.dialer.TLS,
		SASL:     c.dialer.SASLMechanism,
		ClientID: c.dialer.ClientID,
	}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(addr), Transport: transport, Timeout: 2 * c.cfg.DialTimeout}

	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return fmt.Errorf("read topic metadata: %w", err)
	}
	var missing []string
	var errs []error
	for _, t := range topics {
		i := slices.IndexFunc(meta.Topics, func(m kafka.Topic) bool { return m.Name == t })
		switch {
		case i < 0 || errors.Is(meta.Topics[i].Error, kafka.UnknownTopicOrPartition):
			missing = append(missing, t)
		case meta.Topics[i].Error != nil:
			errs = append(errs, fmt.Errorf("topic %q: %w", t, meta.Topics[i].Error))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	if !c.cfg.AutoCreateTopics {
		return fmt.Errorf("%w: %s (create it, or set Config.AutoCreateTopics)", errUnknownTopic, quoteAll(missing))
	}
	req := &kafka.CreateTopicsRequest{}
	for _, t := range missing {
		// -1: the broker's num.partitions and default.replication.factor.
		req.Topics = append(req.Topics, kafka.TopicConfig{Topic: t, NumPartitions: -1, ReplicationFactor: -1})
	}
	resp, err := client.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("create topics %s: %w", quoteAll(missing), err)
	}
	for _, t := range missing {
		if err := resp.Errors[t]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create topic %q: %w", t, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.log.Info("created missing topics", zap.Strings("topics", missing))
	return nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// groupConfig is the kafka-go consumer group's configuration. The consumer commits
// through the generations kafka-go hands out, so it knows that each generation's
// last commit happened before the generation ended.
func (c *Consumer) groupConfig() kafka.ConsumerGroupConfig {
	gc := kafka.ConsumerGroupConfig{
		ID:                    c.cfg.GroupID,
		Brokers:               c.cfg.Brokers,
		Dialer:                c.dialer,
		Topics:                c.cfg.Topics,
		HeartbeatInterval:     c.cfg.HeartbeatInterval,
		SessionTimeout:        c.cfg.SessionTimeout,
		RebalanceTimeout:      c.cfg.RebalanceTimeout,
		WatchPartitionChanges: true,
		StartOffset:           c.cfg.StartOffset,
		ErrorLogger:           zapLogger(c.log, zapcore.WarnLevel),
	}
	if c.log.Core().Enabled(zapcore.DebugLevel) {
		gc.Logger = zapLogger(c.log, zapcore.DebugLevel)
	}
	return gc
}

// openPartition opens a reader of one partition, outside any group (the consumer
// does the group's part), starting at offset: a committed offset, or
// kafka.FirstOffset or kafka.LastOffset. It prefetches up to QueueCapacity messages
// from its first fetch on.
func (c *Consumer) openPartition(topic string, partition int, offset int64) (partitionReader, error) {
	rc := kafka.ReaderConfig{
		Brokers:         c.cfg.Brokers,
		Topic:           topic,
		Partition:       partition,
		Dialer:          c.readers.dialer(c.dialer),
		QueueCapacity:   c.cfg.QueueCapacity,
		MinBytes:        c.cfg.MinBytes,
		MaxBytes:        c.cfg.MaxBytes,
		MaxWait:         c.cfg.MaxWait,
		ReadLagInterval: -1,
		ErrorLogger:     c.readerErrors(zapLogger(c.log, zapcore.WarnLevel)),
	}
	if c.log.Core().Enabled(zapcore.DebugLevel) {
		rc.Logger = zapLogger(c.log, zapcore.DebugLevel)
	}
	var r *kafka.Reader
	err := safe.Call("kafka.NewReader", func() error { // it panics on a bad config
		r = kafka.NewReader(rc)
		return r.SetOffset(offset)
	})
	if err != nil {
		if r != nil {
			_ = r.Close()
		}
		return nil, err
	}
	return r, nil
}

func zapLogger(l *zap.Logger, lvl zapcore.Level) kafka.Logger {
	l = l.WithOptions(zap.AddCallerSkip(1))
	return kafka.LoggerFunc(func(msg string, args ...any) {
		if kafkaNoise(msg) {
			return
		}
		if ce := l.Check(lvl, "kafka-go: "+strings.TrimSpace(fmt.Sprintf(msg, args...))); ce != nil {
			ce.Write()
		}
	})
}

// readerErrors passes a partition reader's errors to l until Stop cut the readers:
// from then on each reader reports the cut connection ("use of closed network
// connection"), which is the exit working as intended, not a warning.
func (c *Consumer) readerErrors(l kafka.Logger) kafka.Logger {
	return kafka.LoggerFunc(func(msg string, args ...any) {
		if c.readers.isCut() {
			return
		}
		l.Printf(msg, args...)
	})
}

// closeGroup closes the group in a goroutine — which ends the generation (and so
// commits what it handled) and leaves the group — and waits for it at most
// CloseTimeout and until ctx is done. kafka-go's Close waits for a join in progress
// and for the broker: one that does not return in time is abandoned — its goroutine
// left to finish on its own — and reported as such. A later call waits for the same
// Close again.
func (c *Consumer) closeGroup(ctx context.Context) (abandoned bool, err error) {
	c.base.Lock()
	if c.group == nil {
		c.base.Unlock()
		return false, nil
	}
	if c.closeDone == nil {
		done, g := make(chan struct{}), c.group
		c.closeDone = done
		go func() {
			err := safe.Call("kafka ConsumerGroup.Close", g.Close)
			c.base.Lock()
			c.closeErr = err
			c.base.Unlock()
			close(done)
		}()
	}
	done := c.closeDone
	c.base.Unlock()

	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CloseTimeout)
	defer cancel()
	if wait.Await(ctx, done) == nil {
		c.base.Lock()
		defer c.base.Unlock()
		err, c.closeErr = c.closeErr, nil // reported once
		if err != nil {
			return false, fmt.Errorf("close group: %w", err)
		}
		return false, nil
	}
	c.log.Warn("kafka group close did not return in time; abandoned (the group notices when the session times out)",
		zap.Duration("waited", time.Since(start)), zap.Duration("close_timeout", c.cfg.CloseTimeout))
	return true, nil
}

// closeWriter closes the dead-letter writer Bind made, waiting at most
// CloseTimeout and until ctx is done.
func (c *Consumer) closeWriter(ctx context.Context) {
	c.base.Lock()
	w := c.ownDLQ
	c.ownDLQ = nil
	c.base.Unlock()
	if w == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CloseTimeout)
	defer cancel()
	if err := safe.Bounded(ctx, "dead-letter writer Close", 0, func(context.Context) error { return w.Close() }); err != nil {
		c.log.Warn("dead-letter writer close failed", zap.Error(err))
	}
}
