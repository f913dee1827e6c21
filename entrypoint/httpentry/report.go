package httpentry

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/fault"
)

// Tag keys of a handler panic's report, beside fault.TagEntrypoint and
// fault.TagTraceID.
const (
	tagRoute     = "route"      // the ServeMux pattern that matched, or the path
	tagMethod    = "method"     // the request's method
	tagRequestID = "request_id" // the request's id, with WithRequestID
)

// handlerPanic is a handler's panic as the Server's recovery caught it, with the
// request the handler saw (the pattern ServeMux matched, the request's span). The
// stack is taken where the panic is caught, on the panicking goroutine before
// anything returns.
type handlerPanic struct {
	value any
	stack []byte
	req   *http.Request
}

// caught turns what finish recovered into a handlerPanic with the stack here and
// req, the request the handler was given.
func caught(v any, req *http.Request) *handlerPanic {
	return &handlerPanic{value: v, stack: debug.Stack(), req: req}
}

// route is the pattern ServeMux matched, or the request's path.
func (p *handlerPanic) route() string {
	if p.req.Pattern != "" {
		return p.req.Pattern
	}
	return p.req.URL.Path
}

// report sends the panic to the Server's error reporter, if any, as a
// *fault.PanicError tagged with the entrypoint, route, method, trace id and request
// id.
func (s *Server) report(p *handlerPanic) {
	if s.reporter == nil {
		return
	}
	route := p.route()
	err := &fault.PanicError{
		What:  fmt.Sprintf("http handler %q of entrypoint %q", route, s.cfg.Name),
		Value: p.value,
		Stack: p.stack,
	}
	tags := map[string]string{fault.TagEntrypoint: s.cfg.Name, tagRoute: route, tagMethod: p.req.Method}
	ctx := p.req.Context()
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tags[fault.TagTraceID] = sc.TraceID().String()
		tags[fault.TagSpanID] = sc.SpanID().String()
	}
	if id := RequestID(ctx); id != "" {
		tags[tagRequestID] = id
	}
	s.reporter.Report(ctx, err, tags)
}
