package kafkakit_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestProducerBounded: with the broker gone, a write returns ErrWriteTimeout within
// WriteTimeout; once a broker is back on the same port, writes succeed again.
func TestProducerBounded(t *testing.T) {
	port := freePort(t)
	cfg := kafkadev.EmbeddedConfig{Ports: []int{port}, Topics: map[string]int{"orders": 1}}
	b, err := kafkadev.NewEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 500 * time.Millisecond
	p, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: b.Brokers(), Topic: "orders", WriteTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if err := p.WriteMessages(ctx, kafka.Message{Value: []byte("1")}); err != nil {
		t.Fatalf("write with the broker up: %v", err)
	}
	b.Close()

	for range 3 {
		began := time.Now()
		err := p.WriteMessages(ctx, kafka.Message{Value: []byte("2")})
		took := time.Since(began)
		if err == nil {
			t.Fatal("write with the broker gone succeeded")
		}
		// A sanity bound, 10× WriteTimeout, for a loaded machine: that a write ends
		// at WriteTimeout exactly is TestProducerTimeoutError's, in virtual time.
		if took > 10*timeout {
			t.Errorf("write with the broker gone took %v (%v), want within WriteTimeout %v", took, err, timeout)
		}
	}

	b, err = kafkadev.NewEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := p.WriteMessages(ctx, kafka.Message{Value: []byte("3")})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still fail 10s after the broker came back: %v", err)
		}
	}
}

func TestProducerInjectsTraceContext(t *testing.T) {
	b, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Topics: map[string]int{"traced": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	p, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: b.Brokers(), Topic: "traced"}, kafkakit.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, parent := tp.Tracer("test").Start(context.Background(), "POST /orders")
	msg := kafka.Message{Value: []byte("x"), Headers: []kafka.Header{{Key: "keep", Value: []byte("me")}}}
	if err := p.WriteMessages(ctx, msg); err != nil {
		t.Fatal(err)
	}
	parent.End()

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: b.Brokers(), Topic: "traced", MaxWait: 100 * time.Millisecond})
	defer r.Close()
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := r.FetchMessage(rctx)
	if err != nil {
		t.Fatal(err)
	}
	carrier := kafkakit.HeaderCarrier{Headers: &got.Headers}
	if carrier.Get("keep") != "me" {
		t.Errorf("headers %v lost the message's own", got.Headers)
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	if sc.TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("trace id in the headers %v, want the caller's %v", sc.TraceID(), parent.SpanContext().TraceID())
	}
	spans := rec.Ended()
	var send sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "send traced" {
			send = s
		}
	}
	if send == nil || send.SpanKind() != trace.SpanKindProducer || send.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("no producer span under the caller's: %v", spans)
	}
	if sc.SpanID() != send.SpanContext().SpanID() {
		t.Errorf("headers carry span %v, want the producer span %v", sc.SpanID(), send.SpanContext().SpanID())
	}
}

func TestConfigErrors(t *testing.T) {
	_, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: []string{"user:secret@broker"}, WriteTimeout: -1})
	ce, ok := errors.AsType[*fault.ConfigError](err)
	if !ok {
		t.Fatalf("NewProducer: %v, want a *fault.ConfigError", err)
	}
	fields := map[string]bool{}
	for _, p := range ce.Problems {
		fields[p.Field] = true
	}
	if !fields["Brokers[0]"] || !fields["WriteTimeout"] {
		t.Errorf("problems %v, want Brokers[0] and WriteTimeout", ce.Problems)
	}
	if s := err.Error(); strings.Contains(s, "secret") {
		t.Errorf("config error %q echoes the broker entry's credentials", s)
	}
}
