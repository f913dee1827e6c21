package httpentry

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
)

// serveHTTP is the root handler of every request: admission through the Gate, the
// span and the request id, stream tracking, panic recovery, metrics and the access
// log, around the user's middleware and handler (WithMiddleware). Past the Gate, a
// plain request allocates nothing of its own: its response wrapper comes from a pool.
// The chain is called directly, so that one recover (in finish) serves: it
// runs on the panicking stack and sees the request ServeMux stamped with its
// pattern. With tracing, the request's span (trace.go) is started here and ended in
// finish, once the answer to a panic is known.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	isStream := s.isStream != nil && s.isStream(r)
	t, verdict := s.admit(r, isStream)
	switch verdict {
	case entrypoint.Draining:
		s.refuse(w)
		return
	case entrypoint.Overloaded:
		s.shed(w)
		return
	}
	var start time.Duration
	if s.metrics != nil {
		start = s.metrics.now()
	}
	if s.leaving.Load() && !isStream {
		s.leave(w, r)
	}
	rw := s.responses.Get().(*response)
	rw.ResponseWriter, rw.srv, rw.req, rw.ticket = w, s, r, t // the rest was zeroed by finish or New
	var span trace.Span
	if s.trace.Tracer != nil || s.requestID {
		ctx := r.Context()
		if s.trace.Tracer != nil {
			ctx, span = s.trace.start(ctx, r)
		}
		if s.requestID {
			ctx = withRequestID(ctx, w, r)
		}
		r = r.WithContext(ctx) // one copy of the request for both
		rw.req = r
	}
	if s.access != nil {
		rw.logStart = s.access.now()
	}
	defer s.finish(rw, t, start, span)
	if isStream {
		rw.stream = s.streams.newStream(r.Context(), true)
		r = r.WithContext(rw.stream.ctx)
		rw.req = r // the request the handler sees, so that a panic's report has its pattern
	}
	s.next.ServeHTTP(rw, r)
}

// refuse answers a request that arrived after Drain closed the Gate: a 503 the
// client may retry elsewhere, on a connection the server then closes, so that a
// keep-alive client does not send its next request here too. The response is
// complete (Content-Length, no reset), so the client can tell a refusal from a
// failure.
func (s *Server) refuse(w http.ResponseWriter) {
	s.refused.Add(1)
	if s.metrics != nil {
		s.metrics.refused.Inc()
		s.metrics.shedDraining.Inc()
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", s.retryAfter)
	h.Set("Connection", "close") // on HTTP/2, net/http turns this into a GOAWAY
	h.Set("Content-Length", strconv.Itoa(len(drainingBody)))
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, drainingBody)
}

// finish runs when a handler returns or panics. It ends the request's span, if any,
// once the status of a panic's answer is known. A panic other than
// http.ErrAbortHandler is logged, counted and answered with a 500 when nothing was
// sent yet; when the response had started, the connection is aborted instead, so
// that the client cannot take a cut-short body for a whole one. ErrAbortHandler is
// re-panicked, as net/http expects, once the request is accounted for.
func (s *Server) finish(w *response, t entrypoint.Ticket, start time.Duration, span trace.Span) {
	v := recover()
	abort := v != nil && v == http.ErrAbortHandler
	var p *handlerPanic
	if v != nil && !abort {
		p = caught(v, w.req)
		abort = s.recovered(w, p)
	}
	if span != nil {
		end(span, w, p)
	}
	w.release(t)
	if s.metrics != nil {
		s.metrics.observe(w, start, abort)
	}
	if s.access != nil {
		s.access.record(w, p, abort, s.log)
	}
	if w.stream == nil {
		// A plain request's wrapper is done with: net/http forbids using a
		// ResponseWriter after its handler returned. A stream's or hijacked
		// connection's wrapper is still referenced, so it is left to the collector.
		w.reset()
		s.responses.Put(w)
	}
	if abort {
		panic(http.ErrAbortHandler)
	}
}

// recovered handles a handler's panic — logged with its stack and the trace id,
// counted, and sent to the error reporter — and reports whether the connection
// must be aborted.
func (s *Server) recovered(w *response, p *handlerPanic) (abort bool) {
	s.panics.Add(1)
	if s.metrics != nil {
		s.metrics.panics.Inc()
	}
	r := p.req
	fields := []zap.Field{
		zap.String("method", r.Method),
		zap.String("path", r.URL.Path),
		zap.Any("panic", p.value),
		zap.ByteString("stack", p.stack),
	}
	if r.Pattern != "" {
		fields = append(fields, zap.String("pattern", r.Pattern))
	}
	if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
		fields = append(fields, zap.String("trace_id", sc.TraceID().String()), zap.String("span_id", sc.SpanID().String()))
	}
	id := RequestID(r.Context())
	if id != "" {
		fields = append(fields, zap.String("request_id", id))
	}
	s.log.Error("http handler panicked", fields...)
	s.report(p)

	switch {
	case w.hijacked:
		w.stream.cut()
		return false
	case w.status != 0:
		return true
	}
	h := w.Header()
	clear(h) // whatever the handler set was meant for another response
	h.Set("Content-Type", "application/json")
	if id != "" {
		h[requestIDHeader] = []string{id}
	}
	h.Set("Content-Length", strconv.Itoa(len(internalBody)))
	w.WriteHeader(http.StatusInternalServerError)
	io.WriteString(w, internalBody)
	return false
}

// response wraps net/http's ResponseWriter to learn the status sent and to track a
// hijacked connection. It forwards Flush, Hijack and ReadFrom, and Unwrap lets
// http.ResponseController reach the rest (deadlines, full duplex).
type response struct {
	http.ResponseWriter
	srv      *Server
	req      *http.Request // as the handler got it (a stream: with the stream ctx)
	stream   *stream       // nil unless the request is a stream or hijacked
	status   int           // 0 until the response's header is committed
	hijacked bool
	ticket   entrypoint.Ticket // the request's Gate unit
	logStart time.Duration     // when the access log's clock saw the request admitted
	unit     func()            // the unit, detached from the limiter when the response showed a stream

	// last is the series the metrics counted this wrapper's last request in: kept
	// across requests, not cleared by reset.
	last lastSeries

	// attrs is where end builds a sampled span's attributes, so that handing them
	// to the span allocates no slice of its own (the span copies them).
	attrs [spanAttrs]attribute.KeyValue
}

// reset zeroes w for its next request. The attributes are cleared only when a span
// used them, so that an untraced request does not pay for clearing them.
func (w *response) reset() {
	used := w.attrs[0].Key != ""
	w.ResponseWriter, w.srv, w.req, w.stream, w.status, w.hijacked = nil, nil, nil, nil, 0, false
	w.ticket, w.unit, w.logStart = entrypoint.Ticket{}, nil, 0
	if used {
		clear(w.attrs[:]) // drop the strings they reference
	}
}

// release gives back the request's Gate unit once its handler returned. A hijacked
// connection keeps the unit until it is closed, so Drain waits for it and InFlight
// counts it, but no longer counts against the admission limit.
func (w *response) release(t entrypoint.Ticket) {
	st := w.stream
	switch {
	case w.unit != nil: // a stream its response showed: the unit left the limiter then
		if w.hijacked {
			st.handOver(w.unit)
			return
		}
		st.end(context.Canceled)
		w.unit()
	case st == nil:
		t.Leave()
	case w.hijacked:
		st.handOver(t.Detach())
	default:
		st.detach()
		st.end(context.Canceled)
		t.Leave()
	}
}

// commit notes that the response's header goes out with code, and recognises a
// stream by it (stream.go).
func (w *response) commit(code int) {
	w.status = code
	if w.stream == nil {
		w.srv.recognise(w)
	}
}

func (w *response) WriteHeader(code int) {
	// 1xx other than 101 are informational: the final header is still to come.
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.commit(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *response) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.commit(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// WriteString passes a string on as net/http's own writer takes it, without the
// copy to a []byte that io.WriteString and fmt.Fprint make through a writer that
// has only Write.
func (w *response) WriteString(p string) (int, error) {
	if w.status == 0 {
		w.commit(http.StatusOK)
	}
	if sw, ok := w.ResponseWriter.(io.StringWriter); ok {
		return sw.WriteString(p)
	}
	return w.ResponseWriter.Write([]byte(p))
}

func (w *response) Flush() { _ = w.FlushError() }

func (w *response) FlushError() error {
	if w.status == 0 {
		w.commit(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *response) ReadFrom(src io.Reader) (int64, error) {
	if w.status == 0 {
		w.commit(http.StatusOK)
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(struct{ io.Writer }{w.ResponseWriter}, src)
}

func (w *response) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack takes over the connection as net/http's Hijack does, and tracks it: the
// spread drain and Stop close it unless closed first. The net.Conn returned wraps
// the connection so that its Close is seen; it is not a *net.TCPConn or a
// *tls.Conn.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("httpentry: hijack: %w", http.ErrNotSupported)
	}
	c, brw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	st := w.stream
	if st == nil {
		st = w.srv.streams.newStream(w.req.Context(), false)
		w.stream = st
	}
	hc := &hijackedConn{Conn: c, st: st}
	w.hijacked = true
	st.hijacked(hc)
	return hc, brw, nil
}
