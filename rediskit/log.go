package rediskit

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logger writes go-redis's log lines through a zap logger (UseLogger). It
// implements go-redis's logging interface.
type logger struct {
	log *zap.Logger
}

// newLogger returns a logger writing to log, named "redis".
func newLogger(log *zap.Logger) *logger {
	return &logger{log: log.Named("redis").WithOptions(zap.AddCallerSkip(2))}
}

// Printf formats a go-redis log line and writes it at the level its text implies.
func (l *logger) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	lvl := levelOf(msg)
	ce := l.log.Check(lvl, msg)
	if ce == nil {
		return
	}
	var fields []zap.Field
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			fields = append(fields, zap.String("trace_id", sc.TraceID().String()),
				zap.String("span_id", sc.SpanID().String()))
		}
	}
	ce.Write(fields...)
}

// UseLogger routes go-redis's log, which is one per process, through log, named
// "redis", so that a service's stderr holds only its own encoding (JSON or
// console), never go-redis's plain "redis: 2026/12/01 … pool.go:770: …" lines. Call
// it once at startup, before the first client is made; each call replaces the last.
//
// go-redis says nothing of a line's level, so one is inferred from its text: a
// recovered panic is an error, a failure a warning, anything else info. A line
// written inside a traced operation carries its trace_id and span_id.
func UseLogger(log *zap.Logger) {
	redis.SetLogger(newLogger(log))
}

func levelOf(msg string) zapcore.Level {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "panic"):
		return zapcore.ErrorLevel
	case strings.Contains(m, "fail"), strings.Contains(m, "error"), strings.Contains(m, "unable"),
		strings.Contains(m, "invalid"), strings.Contains(m, "unexpected"):
		return zapcore.WarnLevel
	}
	return zapcore.InfoLevel
}
