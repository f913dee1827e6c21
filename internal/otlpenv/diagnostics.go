package otlpenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.uber.org/zap"
)

// Diagnostics sends OpenTelemetry's own messages — a malformed OTEL_* value, a
// failed export — to log, named "otel", instead of the plain lines its default
// logger writes to stderr. OpenTelemetry keeps its logger and error handler in
// process-wide state: the last call wins.
//
// What OpenTelemetry attaches to its messages never reaches the log, only its
// shape: its logger's values are the raw variables it failed to parse (a header
// entry, its key or value, an endpoint), and its errors quote them too, or a request
// URL. A line carries the message (a literal in OpenTelemetry's code), the names of
// the values withheld, the Go types along the error's chain and a cause of fixed
// wording (a gRPC code, an errno, a deadline). It does not stop OpenTelemetry from
// putting a value in a message; none of its messages does.
func Diagnostics(log *zap.Logger) {
	log = log.Named("otel")
	otel.SetLogger(logr.New(&zapSink{log: log}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("opentelemetry error (its text is withheld: it may quote a credential)", errorShape(err)...)
	}))
}

// zapSink is a logr.LogSink on zap: logr's V(0) is info, errors are warnings (they
// are OpenTelemetry's, not the service's). Every value is withheld; the line lists
// the keys under "withheld".
type zapSink struct {
	log *zap.Logger
}

func (s *zapSink) Init(logr.RuntimeInfo)  {}
func (s *zapSink) Enabled(level int) bool { return level == 0 }

func (s *zapSink) Info(_ int, msg string, kv ...any) { s.log.Info(msg, withheld(kv)...) }

func (s *zapSink) Error(err error, msg string, kv ...any) {
	s.log.Warn(msg, append(withheld(kv), errorShape(err)...)...)
}

func (s *zapSink) WithValues(kv ...any) logr.LogSink {
	return &zapSink{log: s.log.With(withheld(kv)...)}
}

func (s *zapSink) WithName(name string) logr.LogSink { return &zapSink{log: s.log.Named(name)} }

// withheld names the keys of kv (OpenTelemetry's are literals) without their values.
func withheld(kv []any) []zap.Field {
	if len(kv) < 2 {
		return nil
	}
	keys := make([]string, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			keys = append(keys, k)
		}
	}
	return []zap.Field{zap.Strings("withheld", keys)}
}

// errorShape describes err without its text: the Go types along its chain and, when
// one is recognised, a cause of fixed wording.
func errorShape(err error) []zap.Field {
	if err == nil {
		return nil
	}
	var types []string
	for e := err; e != nil && len(types) < 8; e = errors.Unwrap(e) {
		types = append(types, fmt.Sprintf("%T", e))
	}
	fields := []zap.Field{zap.String("error_types", strings.Join(types, " > "))}
	if c := errorCause(err); c != "" {
		fields = append(fields, zap.String("cause", c))
	}
	return fields
}

// errorCause is what err is about, in words that cannot carry its input.
func errorCause(err error) string {
	var (
		errno syscall.Errno
		dns   *net.DNSError
		op    *net.OpError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &errno):
		return errno.Error()
	case errors.As(err, &dns):
		return "name resolution failed"
	case errors.As(err, &op):
		return "network error (" + op.Op + ")"
	}
	if code := grpcCode(err.Error()); code != "" {
		return "grpc " + code
	}
	return ""
}

// grpcCodes are the names of gRPC's status codes that say why an export failed.
// (OK and Unknown say nothing.)
var grpcCodes = []string{"Canceled", "InvalidArgument", "DeadlineExceeded", "NotFound",
	"AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
	"OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"}

// grpcCode finds the code of a gRPC status error ("rpc error: code = Unavailable
// desc = …") and returns it when it is one of grpcCodes, or "". It reads the text
// rather than the status so that the Host, which calls Diagnostics, links no gRPC;
// only a name from the fixed list is ever returned, never the text around it.
func grpcCode(msg string) string {
	_, rest, ok := strings.Cut(msg, "rpc error: code = ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, " ")
	if slices.Contains(grpcCodes, name) {
		return name
	}
	return ""
}
