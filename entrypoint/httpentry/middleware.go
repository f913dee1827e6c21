package httpentry

import (
	"net/http"

	"github.com/servicewright/servicewright/fault"
)

// A Middleware wraps a handler in another: it may act before and after calling
// next, or answer without calling it.
type Middleware func(next http.Handler) http.Handler

// WithMiddleware wraps the Server's handler in mw, in order: the first is the
// outermost, the one a request meets first. Several WithMiddleware options add to
// one chain, in the order given. The chain is built once, in New; a nil middleware,
// or one that returns a nil handler, makes New fail naming WithMiddleware.
//
// The chain runs inside the Server's own steps, between them and the handler:
//
//  1. admission — the Gate, the concurrency limit, the drain's refusal;
//  2. the request's server span and its request id (WithRequestID);
//  3. stream tracking (a stream's ctx is the one the middleware sees);
//  4. the middleware, first to last;
//  5. the handler.
//
// and recovery, the metrics and the access log (WithAccessLog) see the request
// when all of them returned. So a request refused or shed costs the middleware
// nothing; a middleware that panics is recovered, logged, counted and answered
// with a 500 as a panicking handler is; the metrics, the span and the access log
// count the time spent in the middleware and the status it sent; and a
// middleware reads the request id and the span from r.Context(). What must run
// before admission (a rate limit by client that should not take a unit of the
// limit, say) belongs in front of the Server, not here.
//
// A middleware that wraps the ResponseWriter should forward http.Flusher and
// http.Hijacker, or let http.ResponseController reach them with an Unwrap method,
// so that streams and upgrades still work behind it.
func WithMiddleware(mw ...Middleware) Option {
	return func(o *options) {
		for i, m := range mw {
			if m == nil {
				o.problems.Addf("WithMiddleware", "middleware %d of %d is nil", i+1, len(mw))
			}
		}
		o.middleware = append(o.middleware, mw...)
	}
}

// chain wraps h in mw, the first outermost, and records a nil handler a middleware
// returned in problems.
func chain(h http.Handler, mw []Middleware, l *fault.Problems) http.Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] == nil {
			continue // recorded by WithMiddleware
		}
		next := mw[i](h)
		if next == nil {
			l.Addf("WithMiddleware", "middleware %d of %d returned a nil handler", i+1, len(mw))
			continue
		}
		h = next
	}
	return h
}
