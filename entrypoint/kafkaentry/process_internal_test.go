package kafkaentry

import (
	"context"
	"github.com/servicewright/servicewright/entrypoint"
	"syscall"
	"testing"

	"github.com/segmentio/kafka-go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// processCase is one tracing set-up of BenchmarkProcess and TestProcessAllocs.
type processCase struct {
	name    string
	sampler sdktrace.Sampler // nil: the no-op provider
	parent  bool             // the message carries a sampled traceparent header
}

var processCases = []processCase{
	{name: "untraced"},
	{name: "all", sampler: sdktrace.AlwaysSample()},
	{name: "all-parent", sampler: sdktrace.AlwaysSample(), parent: true},
	{name: "ratio-1pct", sampler: sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))},
}

// newProcessBench is a consumer of topic "t" traced as pc says, whose handler does
// nothing, with a generation to mark its messages in, and a message of partition 3.
func newProcessBench(tb testing.TB, pc processCase) (*Consumer, partitionRun, *kafka.Message) {
	tb.Helper()
	var tp trace.TracerProvider = noop.NewTracerProvider()
	if pc.sampler != nil {
		sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(pc.sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		tb.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
		tp = sdk
	}
	c, err := New(Config{Brokers: []string{"127.0.0.1:9092"}, GroupID: "g", Topics: []string{"t"}},
		func(context.Context, kafka.Message) error { return nil }, WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
	if err != nil {
		tb.Fatal(err)
	}
	msg := &kafka.Message{Topic: "t", Partition: 3, Offset: 42, Key: []byte("k"), Value: []byte("v")}
	if pc.parent {
		msg.Headers = []kafka.Header{
			{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
		}
	}
	// The ctxs of Bind (joinLocked) and of a generation (runGeneration).
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(context.Background()))
	intake, cancelIntake := context.WithCancel(runCtx)
	handlers, cancelHandlers := context.WithCancel(runCtx)
	tb.Cleanup(func() { cancelHandlers(); cancelIntake(); cancelRun() })
	p := partitionRun{assignment: assignment{topic: "t", partition: 3}, gs: &genState{}, intake: intake, handlers: handlers}
	p.start(c) // as consumePartition does
	return c, p, msg
}

// BenchmarkProcess runs what the consumer does for each message it fetched, without
// the broker: a worker slot and the gate (handle), the span continuing the headers'
// trace, the handler, the settlement (counters, the offset marked for commit) and
// the span's end. Its variants: no tracer provider, every span sampled into a batch
// processor whose exporter discards, the same under a sampled parent from the
// headers, and a 1% ratio sampler with no trace context in the message — what
// BenchmarkConsume's variants run per message. Beside ns/op it reports the
// process's CPU time per message (cpu-ns/op), which counts the batch processor's
// goroutine and the garbage collector's work on the other core.
func BenchmarkProcess(b *testing.B) {
	for _, pc := range processCases {
		b.Run(pc.name, func(b *testing.B) {
			c, p, msg := newProcessBench(b, pc)
			b.ReportAllocs()
			cpu := processCPU(b)
			for b.Loop() {
				if !c.handle(p, msg) {
					b.Fatal("message not done")
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time the process has used so far, user and system, in ns.
func processCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestProcessAllocs bounds the allocations of a message's handling, handler and
// settlement included (the handler allocates nothing): none untraced, and with
// tracing only the SDK's and the ctx's. An allocation added to the per-message path
// fails it.
func TestProcessAllocs(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts are not exact under the race detector")
	}
	want := map[string]float64{
		"untraced": 0,
		// The SDK's recording span, its attribute slice and its snapshot at End; the
		// span in the handler's ctx.
		"all": 4,
		// The same, and the trace context read from the headers: the traceparent
		// header's value as a string, the remote span context and its ctx.
		"all-parent": 7,
		// The SDK's non-recording span and the span in the handler's ctx.
		"ratio-1pct": 2,
	}
	for _, pc := range processCases {
		c, p, msg := newProcessBench(t, pc)
		done := true
		got := testing.AllocsPerRun(2000, func() { done = c.handle(p, msg) && done })
		if !done {
			t.Fatalf("%s: a message was not done", pc.name)
		}
		t.Logf("%s: %v allocations per message", pc.name, got)
		if got > want[pc.name] {
			t.Errorf("%s: %v allocations per message, want at most %v", pc.name, got, want[pc.name])
		}
	}
}

// BenchmarkSDKSpan is the floor under BenchmarkProcess's traced rows: the SDK alone
// starting a consumer span under the same ctx, giving it the same six attributes
// when it records, and ending it, with no Consumer around it.
func BenchmarkSDKSpan(b *testing.B) {
	for _, pc := range processCases {
		if pc.sampler == nil || pc.parent {
			continue
		}
		b.Run(pc.name, func(b *testing.B) {
			c, p, msg := newProcessBench(b, pc)
			tracer, ps, ctx := c.tracer, p.spans, p.handlers
			b.ReportAllocs()
			cpu := processCPU(b)
			for b.Loop() {
				_, span := tracer.Start(ctx, ps.name, consumerSpan...)
				if span.IsRecording() {
					ps.attrs[spanAttrs-1] = semconv.MessagingKafkaOffset(int(msg.Offset))
					span.SetAttributes(ps.attrs[:]...)
				}
				span.End()
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
