package host

import (
	"fmt"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.uber.org/zap"
)

// otelDiagnostics sends OpenTelemetry's own messages — a malformed OTEL_* value, a
// failed export — to log, instead of the plain lines its default logger writes to
// stderr. OpenTelemetry keeps them in process-wide state, so the last Host built
// wins; every Host's logger writes to the same place in practice.
func otelDiagnostics(log *zap.Logger) {
	log = log.Named("otel")
	otel.SetLogger(logr.New(&zapSink{log: log}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("opentelemetry", zap.Error(err)) }))
}

// install makes the Host's tracer provider and propagator OpenTelemetry's global
// ones, for libraries instrumented through the globals. Only Main calls it: the
// globals belong to the process.
func (t *telemetry) install() {
	otel.SetTracerProvider(t.tp)
	otel.SetTextMapPropagator(t.prop)
}

// zapSink is a logr.LogSink on zap: logr's V(0) is info, errors are warnings (they
// are OpenTelemetry's, not the service's). Values under the key "input" are withheld:
// OpenTelemetry puts there the raw variable it failed to parse, which may be a header
// carrying a credential.
type zapSink struct {
	log *zap.Logger
}

func (s *zapSink) Init(logr.RuntimeInfo)  {}
func (s *zapSink) Enabled(level int) bool { return level == 0 }

func (s *zapSink) Info(_ int, msg string, kv ...any) { s.log.Info(msg, fields(kv)...) }

func (s *zapSink) Error(err error, msg string, kv ...any) {
	s.log.Warn(msg, append(fields(kv), zap.Error(err))...)
}

func (s *zapSink) WithValues(kv ...any) logr.LogSink { return &zapSink{log: s.log.With(fields(kv)...)} }
func (s *zapSink) WithName(name string) logr.LogSink { return &zapSink{log: s.log.Named(name)} }

func fields(kv []any) []zap.Field {
	out := make([]zap.Field, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		key := fmt.Sprint(kv[i])
		if key == "input" {
			out = append(out, zap.String(key, "[withheld]"))
			continue
		}
		out = append(out, zap.Any(key, kv[i+1]))
	}
	return out
}
