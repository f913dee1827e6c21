package httpentry

import (
	"net/http"

	"github.com/servicewright/servicewright/fault"
)

// WithMiddleware wraps the Server's handler in mw, in order: the first is the
// outermost, the one a request meets first. A middleware wraps a handler in
// another, which may act before and after calling next, or answer without calling
// it. Several WithMiddleware options add to
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
// A middleware that wraps the ResponseWriter should give it an Unwrap method, as
// http.ResponseController asks, so that streams and upgrades still work behind
// it, and so that the Server still learns the route ServeMux matched when the
// middleware hands on a copy of the request (r.WithContext): without one, the
// metrics, the span and the access log of such a request name no route.
func WithMiddleware(mw ...func(next http.Handler) http.Handler) Option {
	return func(o *options) {
		for i, m := range mw {
			if m == nil {
				o.Problems.Addf("WithMiddleware", "middleware %d of %d is nil", i+1, len(mw))
			}
		}
		o.middleware = append(o.middleware, mw...)
	}
}

// chain wraps h in mw, the first outermost, and records a nil handler a middleware
// returned in problems. With any middleware, h is first wrapped in handedTo, so
// that the Server learns the request the handler got.
func chain(h http.Handler, mw []func(http.Handler) http.Handler, l *fault.Problems) http.Handler {
	if len(mw) > 0 {
		h = handedTo(h)
	}
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

// maxUnwrap bounds the ResponseWriter wrappers handedTo looks through.
const maxUnwrap = 16

// handedTo returns h preceded by a note, in the Server's response wrapper, of the
// request h is handed. A middleware that passes on a copy of the request
// (r.WithContext) would otherwise hide from the Server the route ServeMux stamps on
// the copy, and the metrics, the span, the access log and a panic's report would
// see none. The wrapper is found through the middleware's own wrappers by their
// Unwrap method, as http.ResponseController finds it; behind a wrapper without one,
// the Server keeps the request it handed the chain.
func handedTo(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range maxUnwrap {
			if rw, ok := w.(*response); ok {
				rw.req = r
				break
			}
			u, ok := w.(interface{ Unwrap() http.ResponseWriter })
			if !ok {
				break
			}
			w = u.Unwrap()
		}
		h.ServeHTTP(w, r)
	})
}
