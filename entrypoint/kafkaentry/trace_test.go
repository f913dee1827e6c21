package kafkaentry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/kafkakit"
)

// TestTrace: a message produced under a span is handled in a consumer span of the
// same trace, child of the producer's span, with the messaging attributes; a retry
// and the dead-letter write are events of its span; the dead-letter message keeps
// the trace context it came with; the handler's ctx holds the consumer span.
func TestTrace(t *testing.T) {
	topic, dlq := newTopic(t, 1), newTopic(t, 1)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	p, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: broker.Brokers(), Topic: topic}, kafkakit.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tp.Tracer("test").Start(context.Background(), "POST /orders")
	if err := p.WriteMessages(ctx, kafka.Message{Key: []byte("good"), Value: []byte("good")},
		kafka.Message{Key: []byte("bad"), Value: []byte("bad")}); err != nil {
		t.Fatal(err)
	}
	root.End()
	_ = p.Close()

	handlerSpans := make(chan trace.SpanContext, 4)
	logCore, logs := observer.New(zap.InfoLevel)
	col := newCollector()
	cfg := config(t, topic)
	cfg.Retry = kafkaentry.Retry{Attempts: 2, Initial: 10 * time.Millisecond}
	cfg.OnFailure = kafkaentry.DeadLetter(dlq)
	c, err := kafkaentry.New(cfg, func(ctx context.Context, m kafka.Message) error {
		handlerSpans <- trace.SpanContextFromContext(ctx)
		if string(m.Value) == "bad" {
			return errors.New("bad order")
		}
		return col.handle(ctx, m)
	}, kafkaentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp, Logger: zap.New(logCore)}))
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, c)
	dead := readAll(t, dlq, 1)[0]
	r.mustShutdown(t)

	var send sdktrace.ReadOnlySpan
	process := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		switch {
		case s.Name() == "send "+topic:
			send = s
		case s.Name() == "process "+topic:
			for _, a := range s.Attributes() {
				if a.Key == "messaging.kafka.offset" {
					process[[]string{"good", "bad"}[a.Value.AsInt64()]] = s
				}
			}
		}
	}
	if send == nil || len(process) != 2 {
		t.Fatalf("spans: send %v, process %v", send, process)
	}
	for key, s := range process {
		if s.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("%s: kind %v, want consumer", key, s.SpanKind())
		}
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() || s.Parent().SpanID() != send.SpanContext().SpanID() {
			t.Errorf("%s: not a child of the producer span in the request's trace", key)
		}
		attrs := attribute.NewSet(s.Attributes()...)
		for k, want := range map[attribute.Key]string{
			"messaging.system": "kafka", "messaging.destination.name": topic,
			"messaging.destination.partition.id": "0", "messaging.consumer.group.name": cfg.GroupID,
			"messaging.operation.type": "process",
		} {
			if v, ok := attrs.Value(k); !ok || v.String() != want {
				t.Errorf("%s: attribute %s = %v, want %q", key, k, v.String(), want)
			}
		}
		if _, ok := attrs.Value("messaging.kafka.offset"); !ok {
			t.Errorf("%s: no messaging.kafka.offset", key)
		}
		// The outcome is said when it is not "handled".
		want := map[string]string{"good": "", "bad": "dead_lettered"}[key]
		if v, _ := attrs.Value("servicewright.kafka.outcome"); v.String() != want {
			t.Errorf("%s: servicewright.kafka.outcome = %q, want %q", key, v.String(), want)
		}
	}
	events := map[string]bool{}
	for _, e := range process["bad"].Events() {
		events[e.Name] = true
	}
	if !events["retry"] || !events["dead_lettered"] {
		t.Errorf("events of the failing message's span: %v, want retry and dead_lettered", events)
	}
	close(handlerSpans)
	for sc := range handlerSpans {
		if sc.TraceID() != root.SpanContext().TraceID() {
			t.Errorf("the handler's ctx holds trace %v, want the request's", sc.TraceID())
		}
	}
	for _, msg := range []string{"handler failed; retrying", "message dead-lettered"} {
		es := logs.FilterMessage(msg).All()
		if len(es) != 1 || es[0].ContextMap()["trace_id"] != root.SpanContext().TraceID().String() ||
			es[0].ContextMap()["span_id"] != process["bad"].SpanContext().SpanID().String() {
			t.Errorf("log %q: %v, want one line with the handling's trace_id and span_id", msg, es)
		}
	}
	origin := process["bad"].Parent() // the producer span the message carried
	got := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), kafkakit.HeaderCarrier{Headers: &dead.Headers}))
	if got.TraceID() != origin.TraceID() || got.SpanID() != origin.SpanID() {
		t.Errorf("the dead-letter message carries %v/%v, want the original %v/%v", got.TraceID(), got.SpanID(), origin.TraceID(), origin.SpanID())
	}
}

// TestTraceRootWithoutContext: a message that carries no trace context is handled in
// a span of a trace of its own, even when the ctx the consumer was bound with held a
// span; the handler's ctx holds that span.
func TestTraceRootWithoutContext(t *testing.T) {
	topic := newTopic(t, 1)
	produce(t, topic, "a", "b")
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	handled := make(chan trace.SpanContext, 2)
	c, err := kafkaentry.New(config(t, topic), func(ctx context.Context, _ kafka.Message) error {
		handled <- trace.SpanContextFromContext(ctx)
		return nil
	}, kafkaentry.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	ctx, bindSpan := tp.Tracer("test").Start(ctx, "bind")
	if err := c.Bind(ctx); err != nil {
		t.Fatal(err)
	}
	bindSpan.End()
	r := &running{c: c, stop: make(chan struct{}), served: make(chan error, 1)}
	go func() { r.served <- c.Serve(context.Background(), r.stop) }()
	var got []trace.SpanContext
	for range 2 {
		select {
		case sc := <-handled:
			got = append(got, sc)
		case <-time.After(waitFor):
			t.Fatal("messages not handled")
		}
	}
	r.mustShutdown(t)

	spans := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.Name() == "process "+topic {
			spans[s.SpanContext().SpanID()] = s
		}
	}
	if len(spans) != 2 {
		t.Fatalf("%d process spans, want 2", len(spans))
	}
	for _, sc := range got {
		s, ok := spans[sc.SpanID()]
		switch {
		case !ok:
			t.Errorf("the handler's ctx holds span %v, not a process span", sc.SpanID())
		case s.Parent().IsValid() || sc.TraceID() == bindSpan.SpanContext().TraceID():
			t.Errorf("process span %v: parent %v in trace %v, want a root of its own trace", sc.SpanID(), s.Parent().SpanID(), sc.TraceID())
		}
	}
	if got[0].TraceID() == got[1].TraceID() {
		t.Error("two messages without trace context share a trace")
	}
}
