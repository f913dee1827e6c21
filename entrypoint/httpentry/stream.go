package httpentry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/internal/transport"
)

// streamKey finds a request's *stream in its ctx.
type streamKey struct{}

// StreamContext returns the ctx the Server cancels, with cause
// entrypoint.ErrStreamDrained, when the spread drain reaches the stream r belongs
// to or Stop cuts it. It is also cancelled when the client goes away or the stream
// otherwise ends.
//
// A request is a stream when its route is declared with WithStreams or the stream
// matcher says so (by default: Server-Sent Events and protocol upgrades, see
// IsStreamRequest); its r.Context() is then this very ctx, so a handler that already
// watches r.Context() is drained without change. For a request that is not a stream,
// one recognised only by its answer (text/event-stream over HTTP/1, whose
// r.Context() the drain cancels all the same), or one not served by a Server, it
// returns r.Context().
//
// Calling StreamContext declares that the handler watches the stream's ctx. This
// matters for a hijacked connection (a WebSocket): when the drain reaches one whose
// handler called StreamContext, it only cancels the ctx and lets the handler close
// the connection its own way (a close frame, then Close); one whose handler never
// called it is closed by the Server. Unlike a plain request's ctx, a hijacked
// stream's ctx is not cancelled when its handler returns, only when the connection
// is closed, reached by the drain, or cut by Stop.
func StreamContext(r *http.Request) context.Context {
	if st, ok := r.Context().Value(streamKey{}).(*stream); ok {
		st.watched.Store(true)
		return st.ctx
	}
	return r.Context()
}

// A stream is a long-lived request (SSE, a WebSocket) that the spread drain ends on
// its own, and, once hijacked, the connection left behind.
type stream struct {
	set     *streamSet
	ctx     context.Context
	cancel  context.CancelCauseFunc
	unhook  func() bool   // detaches ctx from the request's ctx; nil when not attached
	done    chan struct{} // closed by end
	watched atomic.Bool   // StreamContext was called

	mu    sync.Mutex
	conn  *hijackedConn // set by Hijack
	leave func()        // the Gate unit, handed over when a hijacking handler returns
	ended bool
}

// newStream registers a stream for a request whose ctx is parent. The stream's ctx
// carries parent's values but not its cancellation; when attach is set, parent's
// cancellation (the client went away) is forwarded until the request is hijacked.
func (ss *streamSet) newStream(parent context.Context, attach bool) *stream {
	st := &stream{set: ss, done: make(chan struct{})}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	st.ctx, st.cancel = context.WithValue(ctx, streamKey{}, st), cancel
	if attach {
		st.unhook = context.AfterFunc(parent, func() { cancel(context.Cause(parent)) })
	}
	if !ss.Add(st) {
		// A drain has taken its snapshot already; this one would be missed.
		st.cancel(entrypoint.ErrStreamDrained)
	}
	return st
}

// recognise makes w's request a stream when its response shows one: the handler
// set Content-Type text/event-stream (Server-Sent Events), whatever the request's
// Accept header said. It runs as the response's header is committed, for a request
// that is not a stream already.
//
// The handler's ctx is then net/http's own, not a stream's: the drain reaches the
// stream by cancelling, with cause entrypoint.ErrStreamDrained, the ctx of its
// connection's requests, which only an HTTP/1 connection can spare — it carries this
// one request until the handler returns, and the drain has disabled keep-alives by
// then, so the connection closes after it. Over HTTP/2, where a connection carries
// other requests, a stream is recognised only by the stream matcher and WithStreams.
// The request's Gate unit leaves the admission limiter at once, without a latency
// sample, as a hijacked connection's does.
func (s *Server) recognise(w *response) {
	r := w.req
	if r.ProtoMajor != 1 {
		return
	}
	ct := w.ResponseWriter.Header()["Content-Type"]
	if len(ct) == 0 || !strings.HasPrefix(ct[0], "text/event-stream") {
		return
	}
	c := connOf(r.Context())
	if c == nil {
		return
	}
	w.stream = s.streams.adopt(r.Context(), c.cancel)
	w.unit = w.ticket.Detach()
}

// adopt registers as a stream a request whose ctx is ctx, recognised by its
// response: reaching it cancels its connection's ctx, conn, with cause
// entrypoint.ErrStreamDrained; its end cancels nothing.
func (ss *streamSet) adopt(ctx context.Context, conn context.CancelCauseFunc) *stream {
	st := &stream{set: ss, ctx: ctx, done: make(chan struct{})}
	st.cancel = func(cause error) {
		if errors.Is(cause, entrypoint.ErrStreamDrained) {
			conn(cause)
		}
	}
	if !ss.Add(st) {
		st.cancel(entrypoint.ErrStreamDrained) // a drain has taken its snapshot already
	}
	return st
}

// detach stops forwarding the request ctx's cancellation to the stream's.
func (st *stream) detach() {
	if st.unhook != nil {
		st.unhook()
	}
}

// reach is what the spread drain does to a stream: cancel its ctx, and close its
// hijacked connection if no handler watches the ctx.
func (st *stream) reach() { st.close(false) }

// cut is what Stop does to a stream: cancel its ctx and close its hijacked
// connection, watched or not.
func (st *stream) cut() { st.close(true) }

func (st *stream) close(evenWatched bool) {
	st.cancel(entrypoint.ErrStreamDrained)
	st.mu.Lock()
	c := st.conn
	st.mu.Unlock()
	if c != nil && (evenWatched || !st.watched.Load()) {
		c.Close()
	}
}

// hijacked records that the stream's request took over its connection: the stream
// now lives until c is closed rather than until its handler returns. A stream the
// drain reached before it hijacked, with nobody watching, is closed at once.
func (st *stream) hijacked(c *hijackedConn) {
	st.detach()
	st.mu.Lock()
	st.conn = c
	st.mu.Unlock()
	if errors.Is(context.Cause(st.ctx), entrypoint.ErrStreamDrained) && !st.watched.Load() {
		c.Close()
	}
}

// handOver gives the stream the Gate unit of its hijacking handler, which has
// returned, so that the unit is released when the connection closes. If it closed
// already, the unit is released now.
func (st *stream) handOver(leave func()) {
	st.mu.Lock()
	if !st.ended {
		st.leave = leave
		leave = nil
	}
	st.mu.Unlock()
	if leave != nil {
		leave()
	}
}

// end finishes the stream: cancels its ctx with cause, unregisters it, wakes whoever
// waits for it and releases a handed-over Gate unit. Later calls do nothing.
func (st *stream) end(cause error) {
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return
	}
	st.ended = true
	leave := st.leave
	st.leave = nil
	st.mu.Unlock()

	st.cancel(cause)
	st.set.Remove(st)
	close(st.done)
	if leave != nil {
		leave()
	}
}

// hijackedConn is the connection a handler gets from Hijack. Closing it ends its
// stream, so the Server knows the connection is gone.
type hijackedConn struct {
	net.Conn
	st   *stream
	once sync.Once
	err  error
}

func (c *hijackedConn) Close() error {
	c.once.Do(func() {
		c.err = c.Conn.Close()
		c.st.end(net.ErrClosed)
	})
	return c.err
}

// streamSet holds the streams that have not ended; the drain reaches older streams
// first.
type streamSet struct {
	transport.Streams[*stream]
}

// waitEnded waits for every stream in list to end, or returns ctx.Err().
func waitEnded(ctx context.Context, list []*stream) error {
	for _, st := range list {
		select {
		case <-st.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
