package httpentry

import (
	"net"
	"net/http"
	"strings"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/transport"
)

// An Option adds an optional part to a Server. Middleware that is not asked for costs
// nothing per request.
type Option func(*options)

type options struct {
	transport.Options // WithListener, WithTelemetry, and the problems of every option
	isStream          func(*http.Request) bool
	streams           []string // WithStreams
	admission         admissionOptions
	middleware        []func(http.Handler) http.Handler // WithMiddleware
	requestID         bool                              // WithRequestID
	access            *AccessLog                        // WithAccessLog
}

// WithListener makes Bind use l instead of listening on Config.Addr, which must then
// be empty. The Server takes ownership of l: Drain or Stop closes it.
func WithListener(l net.Listener) Option {
	return func(o *options) { o.UseListener(l) }
}

// WithTelemetry gives the Server its own telemetry; each nil field of t is taken
// from the Host (SetDefaults), and without a Host it stays off. Given more than
// once, the later call's non-nil fields win.
//
// Logger receives handler panics, refused hijacks and net/http's own errors (TLS
// handshakes, malformed requests); with none they are discarded.
//
// Registerer gets the Server's RED metrics, each with a constant label
// entrypoint=Config.Name so that two servers can share a registry:
//
//	servicewright_http_requests_total{code,method}            counter
//	servicewright_http_request_duration_seconds{code,method}  histogram
//	servicewright_http_in_flight                              gauge
//	servicewright_http_refused_draining_total                 counter
//	servicewright_http_panics_total                           counter
//	servicewright_http_shed_total{reason}                     counter
//	servicewright_http_admission_limit                        gauge
//	servicewright_http_admission_share                        gauge
//
// requests_total and the histogram count admitted requests, when their handler
// returns; a refused request is counted only in refused_draining_total and in
// shed_total{reason="draining"}, one shed for overload only in
// shed_total{reason="overload"} (the concurrency limit) or
// shed_total{reason="saturated"} (the CPUs; see admission.Limiter).
// admission_limit is the adaptive concurrency limit and admission_share the share
// of ordinary requests under it admitted in the limiter's last window (both 0 when
// WithAdmission turned it off). method is the request's method when it is a
// standard one and "other" otherwise; code is the status sent, "101" for a hijacked
// connection and "aborted" when the handler aborted the response. in_flight counts
// admitted requests whose handler runs and hijacked connections still open. A
// registration that fails (a name already taken) makes New fail, and nothing is
// left registered.
//
// TracerProvider makes the Server start a server span per admitted request,
// continuing the trace of the request's headers as Propagator reads them (W3C trace
// context and baggage with none), named after the method and the matched route and
// ended once the answer — a panic's 500 included — is known. The global
// OpenTelemetry provider and propagator are not used; with no provider no span is
// made and tracing costs nothing.
//
// Reporter receives each recovered handler panic, as a *fault.PanicError with the
// panicking goroutine's stack, tagged with the entrypoint, the route (the ServeMux
// pattern, or the path), the method and the trace id of the request's span; with
// none, a panic is only logged.
func WithTelemetry(t entrypoint.Telemetry) Option {
	return func(o *options) { o.UseTelemetry(t) }
}

// WithStreamMatcher replaces the rule that tells, from the request, which requests
// are streams, whose ctx the spread drain cancels (see StreamContext). The default,
// IsStreamRequest, matches requests for Server-Sent Events and protocol upgrades such
// as WebSocket. A nil match makes no request a stream by its request; the routes of
// WithStreams, an HTTP/1 answer of Content-Type text/event-stream and hijacked
// connections are still streams.
// match runs for every admitted request, so it must be cheap.
func WithStreamMatcher(match func(r *http.Request) bool) Option {
	return func(o *options) {
		o.isStream = match
	}
}

// WithStreams declares streaming routes: a request that matches one of patterns,
// read as http.ServeMux patterns ("GET /events"), is a stream whatever its headers —
// its r.Context() is cancelled with cause entrypoint.ErrStreamDrained when the drain
// reaches it (see StreamContext), and it is outside the admission limiter. It is the
// one declaration a streaming route needs beyond a handler that ends when its ctx
// does; the stream matcher (WithStreamMatcher) still applies to the other routes.
//
// A Server-Sent Events handler, one that sets Content-Type: text/event-stream, is
// recognised without it over HTTP/1.1, and a hijacked connection always is; declare
// the routes that stream anything else (a flushed chunked body), or SSE over
// HTTP/2. Matching costs a ServeMux lookup per request, only when some pattern is
// declared. An invalid pattern makes New fail.
func WithStreams(patterns ...string) Option {
	return func(o *options) { o.streams = append(o.streams, patterns...) }
}

// streamMatcher returns match extended to the routes of WithStreams, recording an
// invalid pattern in l.
func streamMatcher(match func(*http.Request) bool, patterns []string, l *fault.Problems) func(*http.Request) bool {
	if len(patterns) == 0 {
		return match
	}
	mux := http.NewServeMux()
	for _, p := range patterns {
		func() {
			defer func() {
				if r := recover(); r != nil { // ServeMux panics on a bad or duplicate pattern
					l.Addf("WithStreams", "pattern %q: %v", p, r)
				}
			}()
			mux.Handle(p, http.NotFoundHandler())
		}()
	}
	return func(r *http.Request) bool {
		if match != nil && match(r) {
			return true
		}
		_, pattern := mux.Handler(r)
		return pattern != ""
	}
}

// IsStreamRequest is the default stream matcher: it reports whether r asks for
// Server-Sent Events (its Accept header names text/event-stream) or to upgrade its
// connection to another protocol (it has an Upgrade header, as a WebSocket
// handshake does).
func IsStreamRequest(r *http.Request) bool {
	if len(r.Header["Upgrade"]) > 0 {
		return true
	}
	for _, v := range r.Header["Accept"] {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}
