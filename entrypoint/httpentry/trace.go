package httpentry

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/internal/transport"
)

// The server span of a request is started and ended here rather than by otelhttp.
// Profiled with every request sampled and a batch processor (docs/cost.md), otelhttp
// spent most of its cost on work nobody reads here: a second ResponseWriter wrapper
// (httpsnoop) beside the Server's own, a request body wrapper, a labeler in the ctx,
// and the semantic-convention metric attributes it computes even with a no-op
// meter — the Server's RED metrics already count the same
// requests. It also ends its span before the Server's recovery sees a panic, so a
// panicking handler's span said neither the route, nor 500, nor error. The span
// below carries the attributes of the stable HTTP server conventions that matter for
// finding a request: method, route, status, and the error on a 5xx or a panic.

// tracerName is the instrumentation scope of the Server's spans.
const tracerName = "github.com/servicewright/servicewright/entrypoint/httpentry"

// Span attribute keys, from the OpenTelemetry HTTP semantic conventions.
const (
	attrMethod = attribute.Key("http.request.method")
	attrRoute  = attribute.Key("http.route")
	attrStatus = attribute.Key("http.response.status_code")
	attrScheme = attribute.Key("url.scheme")
	attrPath   = attribute.Key("url.path")
	attrID     = attribute.Key("http.request.id") // WithRequestID
)

// spanAttrs is how many attributes end sets at most.
const spanAttrs = 6

// tracing is the Server's tracer and propagator (transport.NewTracing); the zero
// value traces nothing.
type tracing struct{ transport.Tracing }

// start continues the trace of r's headers in a server span named after the method
// (renamed with the route once the handler matched one) and returns ctx with the
// span, for the request handed on. The span's attributes are all set by end, in
// one call, and only on a span that records: an unsampled request pays for the
// propagation and the span's context, nothing else.
func (t *tracing) start(ctx context.Context, r *http.Request) (context.Context, trace.Span) {
	ctx = t.Prop.Extract(ctx, headerCarrier(r.Header))
	return t.Tracer.Start(ctx, r.Method, t.Opts...)
}

// end records what the request came to and ends its span: the method, scheme and
// path, the route the handler matched (which also names the span), the status sent
// (500 for a panic answered by the Server), and an error status for a 5xx or a panic.
// The attributes are built in w's array, which the span copies.
func end(span trace.Span, w *response, p *handlerPanic) {
	if !span.IsRecording() {
		span.End()
		return
	}
	r, status := w.req, w.status
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	kv := w.attrs[:0]
	kv = append(kv, attrMethod.String(r.Method), attrScheme.String(scheme), attrPath.String(r.URL.Path))
	if pattern := routeOf(r, p); pattern != "" {
		span.SetName(spanName(r, p, pattern))
		kv = append(kv, attrRoute.String(pattern))
	}
	if status != 0 {
		kv = append(kv, attrStatus.Int(status))
	}
	if id := RequestID(r.Context()); id != "" {
		kv = append(kv, attrID.String(id))
	}
	span.SetAttributes(kv...)
	switch {
	case p != nil:
		transport.SpanPanicked(span, p.value)
	case status >= 500:
		span.SetStatus(codes.Error, strconv.Itoa(status))
	}
	span.End()
}

// spanName is "{method} {route}". The pattern ServeMux matched is that string
// already when it names the request's method and no host ("GET /orders/{id}"), and
// is then used as it is rather than built again.
func spanName(r *http.Request, p *handlerPanic, route string) string {
	pattern := r.Pattern
	if p != nil && p.req.Pattern != "" {
		pattern = p.req.Pattern
	}
	if len(pattern) == len(r.Method)+1+len(route) && strings.HasPrefix(pattern, r.Method) && pattern[len(r.Method)] == ' ' {
		return pattern
	}
	return r.Method + " " + route
}

// headerCarrier is propagation.HeaderCarrier, with the header names of the W3C
// propagators looked up under their canonical form directly: http.Header.Get
// canonicalises "traceparent" into a new string on every call, which was one to two
// allocations per traced request.
type headerCarrier http.Header

func (h headerCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		key = "Traceparent"
	case "tracestate":
		key = "Tracestate"
	case "baggage":
		key = "Baggage"
	default:
		return http.Header(h).Get(key)
	}
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { http.Header(h).Set(key, value) }

func (h headerCarrier) Keys() []string { return propagation.HeaderCarrier(h).Keys() }

// routeOf is the path template of the pattern ServeMux matched for the request, as
// seen by the handler (a panic carries its own request): "/orders/{id}" for the
// pattern "GET /orders/{id}" — never the raw path, whose values are unbounded. It is
// "" when no pattern matched (a handler that is not a ServeMux).
func routeOf(r *http.Request, p *handlerPanic) string {
	pattern := r.Pattern
	if p != nil && p.req.Pattern != "" {
		pattern = p.req.Pattern
	}
	return routeOfPattern(pattern)
}

// routeOfPattern is the path template of a ServeMux pattern: "/orders/{id}" for
// "GET /orders/{id}".
func routeOfPattern(pattern string) string {
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		return pattern[i:] // without the method and the host
	}
	return pattern
}
