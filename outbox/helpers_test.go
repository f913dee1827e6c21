package outbox_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/kafkakit/kafkadev"
	"github.com/servicewright/servicewright/outbox"
)

// waitFor is a generous sanity bound on a loaded machine; no test relies on it for
// its timing.
const waitFor = 60 * time.Second

var dbSeq atomic.Int64

// freshDB creates a database of its own for the test and returns a pool on it.
func freshDB(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pg := env.Postgres(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := fmt.Sprintf("outbox_%d_%d", time.Now().UnixNano(), dbSeq.Add(1))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// broker starts an embedded broker with the topics.
func broker(t *testing.T, topics map[string]int) (*kafkadev.Embedded, *kafkakit.Producer) {
	t.Helper()
	b, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	p, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: b.Brokers(), BatchTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return b, p
}

// write commits events in one transaction.
func write(t *testing.T, pool *pgxpool.Pool, box *outbox.Outbox, events ...outbox.Event) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return box.Write(ctx, tx, events...) })
	if err != nil {
		t.Fatal(err)
	}
}

// running is a Relay driven the way the Host drives it.
type running struct {
	r      *outbox.Relay
	stop   chan struct{}
	served chan error
}

func start(t *testing.T, r *outbox.Relay) *running {
	t.Helper()
	if err := r.Bind(context.Background()); err != nil {
		t.Fatal(err)
	}
	run := &running{r: r, stop: make(chan struct{}), served: make(chan error, 1)}
	go func() { run.served <- r.Serve(context.Background(), run.stop) }()
	t.Cleanup(func() { run.shut(t) })
	return run
}

// shut stops the relay as the Host does, once.
func (run *running) shut(t *testing.T) {
	t.Helper()
	select {
	case <-run.stop:
		return
	default:
	}
	close(run.stop)
	if err := <-run.served; err != nil {
		t.Errorf("serve: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := run.r.Drain(ctx); err != nil {
		t.Errorf("drain: %v", err)
	}
	if err := run.r.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// readN reads n messages of topic's partition 0 from the start.
func readN(t *testing.T, b *kafkadev.Embedded, topic string, n int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: b.Brokers(), Topic: topic, MaxWait: 50 * time.Millisecond})
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

func pending(t *testing.T, pool *pgxpool.Pool, box *outbox.Outbox) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+box.Table()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// value sums the samples of the metric called name in reg.
func value(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// onLog returns a logger that calls fn, once, when an entry with message msg is
// logged.
func onLog(msg string, fn func()) *zap.Logger {
	var once sync.Once
	core, _ := observer.New(zap.DebugLevel)
	return zap.New(zapcore.RegisterHooks(core, func(e zapcore.Entry) error {
		if e.Message == msg {
			once.Do(fn)
		}
		return nil
	}))
}

// producerFor returns a producer of its own to addr, with a short write timeout.
func producerFor(t *testing.T, addr string) *kafkakit.Producer {
	t.Helper()
	p, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: []string{addr}, BatchTimeout: time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// restart starts an embedded broker on addr's port again, with topic "orders".
func restart(t *testing.T, addr string) *kafkadev.Embedded {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	b, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Ports: []int{n}, Topics: map[string]int{"orders": 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}
