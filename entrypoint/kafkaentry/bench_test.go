package kafkaentry_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
)

// BenchmarkConsume compares the Consumer with the plain kafka-go loop it replaces —
// FetchMessage, handle, and a synchronous CommitMessages of every partition's last
// offset every 100 messages — on the same topic of the package's broker. Each
// iteration consumes the whole topic in a new group. Each reports msgs/s from the
// first message handled to the last, so that start-up (Bind's checks, the group
// join) and closing are not counted, and the process's CPU time per message over
// the same stretch (cpu-ns/msg; the in-process broker's included). The parent logs
// the ratios to raw kafka-go. The Consumer runs untraced, traced with every span
// sampled into a batch span processor (whose exporter discards them), and traced
// with a 1% ratio sampler. `go run ./internal/cmd/bench -only kafkacost` runs
// rounds of it and prints the median ratios.
func BenchmarkConsume(b *testing.B) {
	const partitions, n, batch = 4, 20000, 100
	topic := newTopic(b, partitions)
	value := strings.Repeat("x", 100)
	for i := 0; i < n; i += 1000 {
		vs := make([]string, 1000)
		for j := range vs {
			vs[j] = fmt.Sprintf("%06d-%s", i+j, value)
		}
		produce(b, topic, vs...)
	}
	ctx := context.Background()
	rates := map[string]float64{}
	// handle is the handler of both: it counts and times the stream.
	var (
		handled          atomic.Int64
		first, last      time.Time // of the current iteration
		firstCPU         time.Duration
		streaming, spent time.Duration // wall and CPU time
	)
	handle := func(context.Context, kafka.Message) error {
		switch handled.Add(1) {
		case 1:
			first, firstCPU = time.Now(), cpuTime(b)
		case n:
			last = time.Now()
			streaming += last.Sub(first)
			spent += cpuTime(b) - firstCPU
		}
		return nil
	}
	report := func(b *testing.B) {
		rates[b.Name()] = float64((n-1)*b.N) / streaming.Seconds()
		b.ReportMetric(rates[b.Name()], "msgs/s")
		b.ReportMetric(float64(spent.Nanoseconds())/float64((n-1)*b.N), "cpu-ns/msg")
	}

	b.Run("raw-kafka-go", func(b *testing.B) {
		streaming, spent = 0, 0
		for range b.N {
			b.StopTimer()
			handled.Store(0)
			group := newGroup(b)
			b.StartTimer()
			r := kafka.NewReader(kafka.ReaderConfig{
				Brokers: broker.Brokers(), GroupID: group, GroupTopics: []string{topic},
				MaxWait: 100 * time.Millisecond, MaxBytes: 10 << 20, ReadLagInterval: -1,
			})
			last := map[int]kafka.Message{}
			commit := func() {
				msgs := make([]kafka.Message, 0, len(last))
				for _, m := range last {
					msgs = append(msgs, m)
				}
				if err := r.CommitMessages(ctx, msgs...); err != nil {
					b.Fatal(err)
				}
				clear(last)
			}
			for i := range n {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					b.Fatal(err)
				}
				_ = handle(ctx, m)
				last[m.Partition] = m
				if (i+1)%batch == 0 {
					commit()
				}
			}
			commit()
			b.StopTimer()
			if err := r.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		report(b)
	})

	for _, v := range []struct {
		name string
		opts []kafkaentry.Option
	}{
		{"kafkaentry", nil},
		// Tracing on: an SDK provider that samples every span into a batch span
		// processor, whose exporter discards them.
		{"kafkaentry-traced", []kafkaentry.Option{kafkaentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tracerProvider(b, sdktrace.AlwaysSample())})}},
		// Tracing on, 1% of the traces sampled (the messages carry no trace context).
		{"kafkaentry-traced-1pct", []kafkaentry.Option{kafkaentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tracerProvider(b, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01)))})}},
	} {
		b.Run(v.name, func(b *testing.B) {
			streaming, spent = 0, 0
			for range b.N {
				b.StopTimer()
				cfg := config(b, topic)
				cfg.CommitBatch = batch
				handled.Store(0)
				done := make(chan struct{})
				h := func(ctx context.Context, m kafka.Message) error {
					_ = handle(ctx, m)
					if handled.Load() == n {
						close(done)
					}
					return nil
				}
				b.StartTimer()
				c, err := kafkaentry.New(cfg, h, v.opts...)
				if err != nil {
					b.Fatal(err)
				}
				r := start(b, c)
				<-done
				b.StopTimer()
				r.mustShutdown(b)
				if st := c.Stats(); st.Committed != n {
					b.Fatalf("committed %d messages, want %d", st.Committed, n)
				}
				b.StartTimer()
			}
			report(b)
		})
	}

	raw := rates[b.Name()+"/raw-kafka-go"]
	for _, v := range []struct {
		name   string
		target float64
	}{{"kafkaentry", 0.95}, {"kafkaentry-traced", 0.70}, {"kafkaentry-traced-1pct", 0.95}} {
		if ours := rates[b.Name()+"/"+v.name]; raw > 0 && ours > 0 {
			b.Logf("%s/raw-kafka-go throughput ratio: %.2f (target ≥ %.2f)", v.name, ours/raw, v.target)
		}
	}
}

// tracerProvider is an SDK tracer provider with sampler, whose spans go to a batch
// span processor that discards them; shut down with b.
func tracerProvider(b *testing.B, sampler sdktrace.Sampler) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// cpuTime is the CPU time the process has used so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
