package grpcentry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
)

// tagMethod is the tag of a handler panic's report that names the RPC's full
// method, beside fault.TagEntrypoint and fault.TagTraceID: "method", as httpentry's.
const tagMethod = "method"

// WithTelemetry gives the Server its own telemetry; each nil field of t is taken
// from the Host (SetDefaults), and without a Host it stays off. Given more than
// once, the later call's non-nil fields win.
//
// Logger receives handler panics; with none they are discarded.
//
// Registerer gets the Server's RED metrics, each with a constant label
// entrypoint=Config.Name so that two servers can share a registry:
//
//	servicewright_grpc_requests_total{method,code}         counter
//	servicewright_grpc_request_duration_seconds{method}    histogram
//	servicewright_grpc_in_flight                           gauge
//	servicewright_grpc_refused_draining_total              counter
//	servicewright_grpc_panics_total                        counter
//	servicewright_grpc_reset_abuse_closed_total            counter
//	servicewright_grpc_connections_open                    gauge
//	servicewright_grpc_connections_max                     gauge
//	servicewright_grpc_accept_paused_total                 counter
//	servicewright_grpc_accept_paused_seconds_total         counter
//
// method is the RPC's full name ("/orders.v1.Orders/GetOrder"), code its status
// code's name ("OK", "UNAVAILABLE"). requests_total and the histogram count
// admitted RPCs when their handler returns; a refused RPC is counted only in
// refused_draining_total; the health service is not counted.
// reset_abuse_closed_total counts the connections closed for resetting too many
// streams (Config.MaxStreamResets), connections_open the connections open, and
// accept_paused_total and accept_paused_seconds_total how often and how long the
// listener stopped accepting at MaxConnections (new connections waiting in the
// backlog), the same connection cap and figures as httpentry's. A registration
// that fails (a name already taken) makes New fail, and nothing is left
// registered.
//
// TracerProvider makes the Server start a server span per admitted RPC,
// continuing the trace of the call's metadata as Propagator reads it (W3C trace
// context and baggage with none), named "package.Service/Method" and ended once
// the status — a panic's INTERNAL included — is known. The span carries the RPC
// semantic conventions' rpc.system.name, rpc.method and
// rpc.response.status_code, and an error status for UNKNOWN, DEADLINE_EXCEEDED,
// UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS or a panic (whose type only is
// recorded, never its text). The health service is not traced, and the global
// OpenTelemetry provider and propagator are not used; with no provider, or a
// no-op one, no span is made and tracing costs nothing.
//
// Reporter receives each recovered handler panic, as a *fault.PanicError with the
// panicking goroutine's stack, tagged with the entrypoint (fault.TagEntrypoint),
// the RPC's full method ("method") and the trace and span ids of the RPC's span;
// with none, a panic is only logged.
func WithTelemetry(t entrypoint.Telemetry) Option {
	return func(o *options) { o.UseTelemetry(t) }
}

// reportPanic sends a handler's panic to the error reporter, if any.
func (s *Server) reportPanic(ctx context.Context, method string, v any, stack []byte) {
	if s.reporter == nil {
		return
	}
	err := &fault.PanicError{What: fmt.Sprintf("grpc handler %s of entrypoint %q", method, s.cfg.Name), Value: v, Stack: stack}
	tags := map[string]string{fault.TagEntrypoint: s.cfg.Name, tagMethod: method}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tags[fault.TagTraceID] = sc.TraceID().String()
		tags[fault.TagSpanID] = sc.SpanID().String()
	}
	s.reporter.Report(ctx, err, tags)
}
