package httpentry

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
)

// requestIDHeader is the header a request id is taken from and sent back in.
const requestIDHeader = "X-Request-Id"

// maxRequestID bounds an incoming request id the Server takes as it is.
const maxRequestID = 128

// WithRequestID gives every admitted request an id: the one in its X-Request-Id
// header when that is well formed (1 to 128 letters, digits, '-', '_', '.' or ':'),
// so that an id a proxy or a caller made follows the request, and a new random one
// (32 hex digits, unique but not secret) otherwise. The id is
//
//   - sent back in the response's X-Request-Id header, a panic's 500 included;
//   - in the request's context, for the middleware and the handler: RequestID(ctx)
//     returns it, to put in their logs;
//   - in the access log (WithAccessLog), the log of a handler's panic, and the
//     server span's attributes (http.request.id) when the request is traced.
//
// A request refused or shed by admission gets none. Without WithRequestID the
// Server neither reads nor sets the header. It costs a few small allocations per
// request (BenchmarkMiddleware).
func WithRequestID() Option {
	return func(o *options) { o.requestID = true }
}

// requestIDKey is the context key of a request's id.
type requestIDKey struct{}

// idContext is a context carrying a request id: one allocation where
// context.WithValue would make two (the context and the id boxed in an any), and
// its Value returns itself, so that reading the id boxes nothing either.
type idContext struct {
	context.Context
	id string
}

func (c *idContext) Value(key any) any {
	if key == (requestIDKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// RequestID returns the id WithRequestID gave the request whose context ctx is, or
// "" when it has none.
func RequestID(ctx context.Context) string {
	if c, ok := ctx.Value(requestIDKey{}).(*idContext); ok {
		return c.id
	}
	return ""
}

// withRequestID returns ctx with r's id, and sets the id on the response.
func withRequestID(ctx context.Context, w http.ResponseWriter, r *http.Request) context.Context {
	id := r.Header.Get(requestIDHeader)
	if !wellFormedID(id) {
		id = newRequestID()
	}
	w.Header()[requestIDHeader] = []string{id}
	return &idContext{Context: ctx, id: id}
}

// wellFormedID reports whether id may be taken as a request id as it is: short,
// and of characters that cannot forge a log line or a header.
func wellFormedID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// newRequestID returns 128 random bits in hex. An id must be unique, not secret:
// the runtime's generator (math/rand/v2), unlike crypto/rand, costs no system call.
func newRequestID() string {
	var b [16]byte
	var h [32]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	hex.Encode(h[:], b[:])
	return string(h[:])
}
