package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/kafkakit/kafkadev"
	"github.com/servicewright/servicewright/outbox"
)

// Sizes of BenchmarkPublish.
const (
	latencySamples = 300 // events written one at a time, each awaited
	writers        = 8   // concurrent writers of the throughput run
	perWriter      = 250 // events each
)

// BenchmarkPublish compares publishing through the outbox (a transaction that writes
// the event, committed; a Relay publishes it) with a direct produce (WriteMessages
// on the same kafkakit producer), each against the same in-process broker and read
// by the same kind of partition reader:
//
//   - latency, p50-ms and p99-ms: events written one at a time, from the call (direct)
//     or the commit (outbox) to the reader's receipt;
//   - events/s: 8 writers × 250 events at once, each its own transaction (outbox) or
//     call (direct), until the reader has all 2000.
//
// Run it with -benchtime 1x: each run is one measurement (make bench takes the median
// of several).
func BenchmarkPublish(b *testing.B) {
	for _, mode := range []string{"direct", "outbox"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				lat, rate := publishRun(b, mode)
				b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
				b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
				b.ReportMetric(rate, "events/s")
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// publishRun measures one mode on a fresh database and broker: sorted latencies,
// and the throughput.
func publishRun(b *testing.B, mode string) ([]time.Duration, float64) {
	pool := benchDB(b)
	broker, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Topics: map[string]int{"bench": 1}})
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	producer, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: broker.Brokers(), BatchTimeout: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer producer.Close()
	ctx := context.Background()
	box, _ := outbox.New("T", "")
	if err := box.Create(ctx, pool); err != nil {
		b.Fatal(err)
	}
	publish := func(ctx context.Context, key string) error {
		return producer.WriteMessages(ctx, kafka.Message{Topic: "bench", Key: []byte(key), Value: []byte(key)})
	}
	if mode == "outbox" {
		relay, err := outbox.NewRelay(box, pool, producer, outbox.RelayConfig{})
		if err != nil {
			b.Fatal(err)
		}
		stop := serveRelay(b, relay)
		defer stop()
		publish = func(ctx context.Context, key string) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				return box.Write(ctx, tx, outbox.Event{Topic: "bench", Key: key, Value: []byte(key)})
			})
		}
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: broker.Brokers(), Topic: "bench", MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 5 * time.Millisecond,
		ReadBackoffMin: time.Millisecond, ReadBackoffMax: 5 * time.Millisecond}) // kafka-go waits 100ms after an empty fetch by default
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	read := func() {
		if _, err := r.ReadMessage(rctx); err != nil {
			b.Fatal(err)
		}
	}

	lat := make([]time.Duration, 0, latencySamples)
	for i := range latencySamples {
		began := time.Now()
		if err := publish(ctx, fmt.Sprint("l", i%16)); err != nil {
			b.Fatal(err)
		}
		read()
		lat = append(lat, time.Since(began))
	}
	slices.Sort(lat)

	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if err := publish(ctx, fmt.Sprint("w", w, "-", i%16)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range writers * perWriter {
		read()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return lat, float64(writers*perWriter) / time.Since(began).Seconds()
}

// benchDB is freshDB for a benchmark.
func benchDB(b *testing.B) *pgxpool.Pool {
	b.Helper()
	pg := env.Postgres(b)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close(ctx)
	name := fmt.Sprintf("outbox_bench_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		b.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(pg.DSN())
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.Database = name
	cfg.MaxConns = writers + 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// serveRelay binds and serves relay as the Host would; the returned func drains and
// stops it.
func serveRelay(b *testing.B, relay *outbox.Relay) func() {
	ctx := context.Background()
	if err := relay.Bind(ctx); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- relay.Serve(ctx, stop) }()
	return func() {
		close(stop)
		<-served
		_ = relay.Drain(ctx)
		_ = relay.Stop(ctx)
	}
}
