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
	TagRoute  = "route"  // the ServeMux pattern that matched, or the path
	TagMethod = "method" // the request's method
)

// handlerPanic carries a handler's panic out to the Server's recovery, through
// otelhttp, with what only the handler's own request knows: the pattern ServeMux
// matched and the span otelhttp started. The stack is taken where the panic is
// caught, before anything returns.
type handlerPanic struct {
	value any
	stack []byte
	req   *http.Request
}

// serveGuarded runs the user's handler; a panic other than http.ErrAbortHandler
// goes on as a *handlerPanic.
func (s *Server) serveGuarded(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			panic(&handlerPanic{value: v, stack: debug.Stack(), req: r})
		}
	}()
	s.handler.ServeHTTP(w, r)
}

// DrainReport tells, for the shutdown report, what the connection cap (MaxConns)
// held back: "conns_max=384 conns_peak=384 accept_paused=3 paused_for=12.5s", and
// how many connections waiting in the listen backlog Drain answered 503 draining
// ("backlog_answered=716"), once Serve has returned.
func (s *Server) DrainReport() string {
	r := s.capped.Report()
	s.mu.Lock()
	done, bl := s.serveDone, s.backlog
	s.mu.Unlock()
	if done == nil || bl == nil {
		return r
	}
	select {
	case <-done: // the accept loop, bl.taken's only writer, has returned
		if bl.taken > 0 {
			r += fmt.Sprintf(" backlog_answered=%d", bl.taken)
		}
	default:
	}
	return r
}

// caught turns what finish recovered into the panic as the handler raised it.
// A panic from outside the guard (the stream matcher, the response wrapper) is
// taken as it is, with the stack here and the request as it reached the Server.
func caught(v any, outer *http.Request) *handlerPanic {
	if hp, ok := v.(*handlerPanic); ok {
		return hp
	}
	return &handlerPanic{value: v, stack: debug.Stack(), req: outer}
}

// route is the pattern ServeMux matched, or the request's path.
func (p *handlerPanic) route() string {
	if p.req.Pattern != "" {
		return p.req.Pattern
	}
	return p.req.URL.Path
}

// report sends the panic to the Server's error reporter, if any, as a
// *fault.PanicError tagged with the entrypoint, route, method and trace id.
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
	tags := map[string]string{fault.TagEntrypoint: s.cfg.Name, TagRoute: route, TagMethod: p.req.Method}
	ctx := p.req.Context()
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tags[fault.TagTraceID] = sc.TraceID().String()
		tags[fault.TagSpanID] = sc.SpanID().String()
	}
	s.reporter.Report(ctx, err, tags)
}
