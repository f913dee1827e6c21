package host

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/servicewright/servicewright/fault"
)

// Log encodings for SW_LOG_FORMAT.
const (
	LogJSON    = "json"
	LogConsole = "console"
)

// newLogger builds the Host's own logger on stderr: the level from SW_LOG_LEVEL
// (default info), the encoding from SW_LOG_FORMAT, or console when stderr is a
// terminal and JSON otherwise. A bad value is recorded in l and the default used.
func newLogger(lookup func(string) (string, bool), l *fault.Problems) *zap.Logger {
	level := zapcore.InfoLevel
	if v, ok := lookup("SW_LOG_LEVEL"); ok && v != "" {
		if err := level.Set(strings.ToLower(v)); err != nil {
			l.Addf("SW_LOG_LEVEL", "unknown level %q (want debug, info, warn or error)", v)
		}
	}
	format := LogJSON
	if term.IsTerminal(int(os.Stderr.Fd())) {
		format = LogConsole
	}
	if v, ok := lookup("SW_LOG_FORMAT"); ok && v != "" {
		switch f := strings.ToLower(strings.TrimSpace(v)); f {
		case LogJSON, LogConsole:
			format = f
		default:
			l.Addf("SW_LOG_FORMAT", "unknown format %q (want json or console)", v)
		}
	}
	return zap.New(zapcore.NewCore(encoder(format), zapcore.Lock(os.Stderr), level))
}

// encoder is the JSON encoder of the Host's logs, or the console one: the same
// fields, coloured levels and the time of day, one line per entry.
func encoder(format string) zapcore.Encoder {
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeDuration = zapcore.StringDurationEncoder
	if format == LogConsole {
		enc.EncodeLevel = zapcore.CapitalColorLevelEncoder
		enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc.EncodeCaller = nil
		return zapcore.NewConsoleEncoder(enc)
	}
	return zapcore.NewJSONEncoder(enc)
}

// LoggerFor returns log with the trace_id and span_id of the span in ctx, so every
// line written inside a traced operation can be found from its trace. Without a
// valid span in ctx it returns log unchanged.
func LoggerFor(ctx context.Context, log *zap.Logger) *zap.Logger {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return log
	}
	return log.With(zap.String("trace_id", sc.TraceID().String()), zap.String("span_id", sc.SpanID().String()))
}
