package telemetry

import (
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/servicewright/servicewright/fault"
)

// DurationSuffix ends the key of every duration in the Host's JSON logs, whose
// value is a number of seconds: zap.Duration("took", d) is written "took_seconds":
// 0.000622, so that a log pipeline can sum and compare it (a string in mixed units,
// "622µs", it cannot). The console encoding, for a person, keeps "took": "622µs".
const DurationSuffix = "_seconds"

// Log encodings for SW_LOG_FORMAT.
const (
	logJSON    = "json"
	logConsole = "console"
)

// NewLogger builds the Host's own logger on stderr: the level from level (the value
// of SW_LOG_LEVEL; "" means info), the encoding from format (SW_LOG_FORMAT), or
// console when stderr is a terminal and JSON otherwise. A bad value is recorded in l
// under field (the Config field the logger stands in for) and its variable, and the
// default used. console reports the console encoding.
// The lines go to stderr through sink, so that a stalled or vanished reader of
// stderr holds nothing up (Sink).
func NewLogger(field, level, format string, l *fault.Problems) (log *zap.Logger, console bool, sink *Sink) {
	lvl := zapcore.InfoLevel
	if v := level; v != "" {
		if err := lvl.Set(strings.ToLower(v)); err != nil {
			l.AddEnvf(field, "SW_LOG_LEVEL", "unknown level %q (want debug, info, warn or error)", v)
		}
	}
	tty := term.IsTerminal(int(os.Stderr.Fd()))
	enc := logJSON
	if tty {
		enc = logConsole
	}
	if v := format; v != "" {
		switch f := strings.ToLower(strings.TrimSpace(v)); f {
		case logJSON, logConsole:
			enc = f
		default:
			l.AddEnvf(field, "SW_LOG_FORMAT", "unknown format %q (want json or console)", v)
		}
	}
	sink = NewSink(os.Stderr, logBufferBytes)
	return zap.New(zapcore.NewCore(encoder(enc, tty), sink, lvl)), enc == logConsole, sink
}

// encoder is the JSON encoder of the Host's logs, or the console one: the time of
// day, the level (coloured when colour is set: the output is a terminal), the service
// and instance once (console.go), and the shutdown report as a block.
func encoder(format string, colour bool) zapcore.Encoder {
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeDuration = zapcore.StringDurationEncoder
	if format == logConsole {
		enc.EncodeLevel = zapcore.CapitalLevelEncoder
		if colour {
			enc.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
		enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc.EncodeCaller = nil
		return newConsoleEncoder(enc)
	}
	enc.EncodeDuration = zapcore.SecondsDurationEncoder // in a nested object too
	return secondsEncoder{zapcore.NewJSONEncoder(enc)}
}

// secondsEncoder is the JSON encoder with each duration field written as a number of
// seconds under its key plus DurationSuffix: the fields of a line and those a
// logger was given With. A duration inside an object or an array is a number of
// seconds too, its key left as it is.
type secondsEncoder struct{ zapcore.Encoder }

func (e secondsEncoder) AddDuration(key string, d time.Duration) {
	e.Encoder.AddFloat64(key+DurationSuffix, d.Seconds())
}

func (e secondsEncoder) Clone() zapcore.Encoder { return secondsEncoder{e.Encoder.Clone()} }

func (e secondsEncoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	copied := false
	for i, f := range fields {
		if f.Type != zapcore.DurationType {
			continue
		}
		if !copied {
			fields, copied = slices.Clone(fields), true
		}
		fields[i] = zap.Float64(f.Key+DurationSuffix, time.Duration(f.Integer).Seconds())
	}
	return e.Encoder.EncodeEntry(ent, fields)
}

// FallbackLogger is the logger of last resort, for a configuration error found
// before the Host's own logger exists: JSON on stderr at info, as the Host's logger
// writes.
func FallbackLogger() *zap.Logger {
	return zap.New(zapcore.NewCore(encoder(logJSON, false), NewSink(os.Stderr, logBufferBytes), zapcore.InfoLevel))
}
