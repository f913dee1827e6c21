package grpcentry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/fault"
)

// TagMethod is the tag of a handler panic's report that names the RPC's full
// method, beside fault.TagEntrypoint and fault.TagTraceID.
const TagMethod = "method"

// WithPropagator makes the tracing extract the caller's trace context from the
// request metadata with p. Without it the Server uses the propagator its Host hands
// it (OTEL_PROPAGATORS), and W3C trace context and baggage with neither. It matters
// only when RPCs are traced. A nil p is ignored.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(o *options) {
		if p != nil {
			o.given.Propagator = p
		}
	}
}

// WithReporter sends each recovered handler panic to r, as a *fault.PanicError with
// the panicking goroutine's stack, tagged with the entrypoint, the method and the
// trace id of the RPC's span. Without it the Server uses the error reporter its Host
// hands it, if any; with neither, a panic is only logged. A nil r is ignored.
func WithReporter(r fault.Reporter) Option {
	return func(o *options) {
		if r != nil {
			o.given.Reporter = r
		}
	}
}

// reportPanic sends a handler's panic to the error reporter, if any.
func (s *Server) reportPanic(ctx context.Context, method string, v any, stack []byte) {
	if s.reporter == nil {
		return
	}
	err := &fault.PanicError{What: fmt.Sprintf("grpc handler %s of entrypoint %q", method, s.cfg.Name), Value: v, Stack: stack}
	tags := map[string]string{fault.TagEntrypoint: s.cfg.Name, TagMethod: method}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tags[fault.TagTraceID] = sc.TraceID().String()
		tags[fault.TagSpanID] = sc.SpanID().String()
	}
	s.reporter.Report(ctx, err, tags)
}
