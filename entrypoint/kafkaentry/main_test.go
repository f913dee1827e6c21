package kafkaentry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

// The package's one broker: an in-process kfake cluster on a loopback port.
var (
	broker    *kafkadev.Embedded
	brokerErr error
)

func TestMain(m *testing.M) {
	broker, brokerErr = kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{})
	code := m.Run()
	if broker != nil {
		broker.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// waitFor bounds every wait on the broker: it is a failure timeout, never a pause.
const waitFor = 20 * time.Second

var names atomic.Int64

// newTopic creates a topic with the given partitions, named after the test.
func newTopic(t testing.TB, partitions int) string {
	t.Helper()
	if brokerErr != nil {
		t.Fatal(brokerErr)
	}
	name := fmt.Sprintf("%s-%d", safeName(t), names.Add(1))
	if err := broker.CreateTopic(name, partitions); err != nil {
		t.Fatal(err)
	}
	return name
}

// newGroup returns a group ID no other test uses.
func newGroup(t testing.TB) string {
	return fmt.Sprintf("group-%s-%d", safeName(t), names.Add(1))
}

// safeName is the test's name in the characters a topic name may hold.
func safeName(t testing.TB) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '.'
	}, t.Name())
}

// config is a consumer of topic in a group of its own, with short fetch waits so
// that closing the reader is quick.
func config(t testing.TB, topic string) kafkaentry.Config {
	return kafkaentry.Config{
		Brokers: broker.Brokers(),
		GroupID: newGroup(t),
		Topics:  []string{topic},
		MaxWait: 100 * time.Millisecond,
	}
}

// produce writes values to topic; each message's key is its value, so that a key's
// messages share a partition.
func produce(t testing.TB, topic string, values ...string) {
	t.Helper()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Topic: topic, Key: []byte(v), Value: []byte(v)}
	}
	w := newProducer(t, "")
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// produceToPartition writes values to one partition of topic, in order.
func produceToPartition(t testing.TB, topic string, partition int, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	conn, err := kafka.DialLeader(ctx, "tcp", broker.Brokers()[0], topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Key: []byte(v), Value: []byte(v)}
	}
	if _, err := conn.WriteMessages(msgs...); err != nil {
		t.Fatal(err)
	}
}

func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return out
}

// running is a consumer driven the way the Host drives it.
type running struct {
	c      *kafkaentry.Consumer
	stop   chan struct{}
	served chan error
}

// start binds c and runs Serve in a goroutine.
func start(t testing.TB, c *kafkaentry.Consumer) *running {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Bind(ctx); err != nil {
		t.Fatal(err)
	}
	r := &running{c: c, stop: make(chan struct{}), served: make(chan error, 1)}
	go func() { r.served <- c.Serve(context.Background(), r.stop) }()
	return r
}

// failed waits for Serve to return on its own (the work failed) and returns its error.
func (r *running) failed(t testing.TB) error {
	t.Helper()
	select {
	case err := <-r.served:
		return err
	case <-time.After(waitFor):
		t.Fatal("Serve did not fail")
		return nil
	}
}

// shutdown closes stop, waits for Serve, then drains within grace and stops. It
// returns Serve's, Drain's and Stop's errors.
func (r *running) shutdown(t testing.TB, grace time.Duration) (serveErr, drainErr, stopErr error) {
	t.Helper()
	close(r.stop)
	select {
	case serveErr = <-r.served:
	case <-time.After(waitFor):
		t.Fatal("Serve did not return after stop")
	}
	dctx, cancel := context.WithTimeout(context.Background(), grace)
	drainErr = r.c.Drain(dctx)
	cancel()
	sctx, cancel := context.WithTimeout(context.Background(), waitFor)
	stopErr = r.c.Stop(sctx)
	cancel()
	return serveErr, drainErr, stopErr
}

// mustShutdown is shutdown expecting no error at all.
func (r *running) mustShutdown(t testing.TB) {
	t.Helper()
	serveErr, drainErr, stopErr := r.shutdown(t, waitFor)
	if err := errors.Join(serveErr, drainErr, stopErr); err != nil {
		t.Fatal(err)
	}
}

// collector is a handler that records what it was given and lets tests wait for it.
type collector struct {
	mu      sync.Mutex
	byValue map[string]int  // value → deliveries
	order   map[int][]int64 // partition → offsets, in handling order
	values  []string        // in handling order
	changed chan struct{}   // signalled after every message
	fn      func(kafka.Message) error
}

func newCollector() *collector {
	return &collector{byValue: map[string]int{}, order: map[int][]int64{}, changed: make(chan struct{}, 1)}
}

func (c *collector) handle(_ context.Context, msg kafka.Message) error {
	if c.fn != nil {
		if err := c.fn(msg); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.byValue[string(msg.Value)]++
	c.order[msg.Partition] = append(c.order[msg.Partition], msg.Offset)
	c.values = append(c.values, string(msg.Value))
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return nil
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.values)
}

// waitCount waits until the collector handled at least n messages.
func (c *collector) waitCount(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(waitFor)
	for c.count() < n {
		select {
		case <-c.changed:
		case <-deadline:
			t.Fatalf("handled %d messages, want %d", c.count(), n)
		}
	}
}

func (c *collector) handled() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.values...)
}

// committed returns the group's committed offset of each partition of topic
// (-1 where nothing was committed).
func committed(t testing.TB, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(broker.Brokers()...), Transport: transport}
	ps := make([]int, partitions)
	for i := range ps {
		ps[i] = i
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
	if err == nil {
		err = resp.Error
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		out[p.Partition] = p.CommittedOffset
	}
	return out
}

// endOffsets returns the next offset to be written on each partition of topic.
func endOffsets(t testing.TB, topic string, partitions int) map[int]int64 {
	t.Helper()
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(broker.Brokers()...), Transport: transport}
	reqs := make([]kafka.OffsetRequest, partitions)
	for i := range reqs {
		reqs[i] = kafka.LastOffsetOf(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			t.Fatal(p.Error)
		}
		out[p.Partition] = p.LastOffset
	}
	return out
}

// readAll reads n messages from partition 0 of topic, from the start, without a group.
func readAll(t testing.TB, topic string, n int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: broker.Brokers(), Topic: topic, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	out := make([]kafka.Message, 0, n)
	for len(out) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("read %d of %d messages from %s: %v", len(out), n, topic, err)
		}
		out = append(out, m)
	}
	return out
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// onLog returns a logger that calls fn, once, when an entry with message msg is logged.
func onLog(msg string, fn func()) *zap.Logger {
	var once sync.Once
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zap.DebugLevel)
	return zap.New(zapcore.RegisterHooks(core, func(e zapcore.Entry) error {
		if e.Message == msg {
			once.Do(fn)
		}
		return nil
	}))
}

// newProducer is a producer to the test broker; topic "" lets each message name its own.
func newProducer(t testing.TB, topic string) *kafkakit.Producer {
	t.Helper()
	p, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: broker.Brokers(), Topic: topic, WriteTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
