package rediskit

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLogger(t *testing.T) {
	t.Run("each line goes to zap at the level its text implies", func(t *testing.T) {
		core, logs := observer.New(zapcore.DebugLevel)
		l := newLogger(zap.New(core))
		l.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v", 5, "connection refused")
		l.Printf(context.Background(), "autopipeline: recovered dispatch panic: %v\n%s", "boom", "stack")
		l.Printf(context.Background(), "sentinel: new master=%q addr=%q", "m", "127.0.0.1:6379")
		want := []struct {
			lvl zapcore.Level
			msg string
		}{
			{zapcore.WarnLevel, "redis: connection pool: failed to dial after 5 attempts: connection refused"},
			{zapcore.ErrorLevel, "autopipeline: recovered dispatch panic: boom\nstack"},
			{zapcore.InfoLevel, `sentinel: new master="m" addr="127.0.0.1:6379"`},
		}
		got := logs.All()
		if len(got) != len(want) {
			t.Fatalf("got %d entries, want %d", len(got), len(want))
		}
		for i, w := range want {
			if got[i].Level != w.lvl || got[i].Message != w.msg || got[i].LoggerName != "redis" {
				t.Errorf("entry %d = %s %s %q, want %s redis %q", i, got[i].Level, got[i].LoggerName, got[i].Message, w.lvl, w.msg)
			}
		}
	})

	t.Run("a line inside a span carries its ids", func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		l := newLogger(zap.New(core))
		tp := sdktrace.NewTracerProvider()
		ctx, span := tp.Tracer("t").Start(context.Background(), "op")
		l.Printf(ctx, "redis: discarding bad PubSub connection: %v", "EOF")
		span.End()
		f := logs.All()[0].ContextMap()
		if f["trace_id"] != span.SpanContext().TraceID().String() || f["span_id"] != span.SpanContext().SpanID().String() {
			t.Errorf("fields %v, want the span's ids", f)
		}
	})
}
