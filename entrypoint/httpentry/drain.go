package httpentry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/internal/transport"
	"github.com/servicewright/servicewright/internal/wait"
)

// DrainStreams is a drain hook: it closes the streams open now, spread evenly over
// min(StreamDrainWindow, allowed), while the server still admits and serves every
// request, so that streaming clients move to other replicas a few at a time before
// Drain. Its signature is that of a drain hook's Run, so it can be registered as
// one (hooks.DrainHook{Name: "http-streams", Run: srv.DrainStreams}).
//
// First it disables keep-alives, so that a client whose stream ends reconnects
// through its load balancer rather than on the same connection: an HTTP/1
// connection closes after its current response (idle ones at once), an HTTP/2 one is
// sent a GOAWAY when it falls idle. Then it reaches each stream in turn, oldest
// first, with entrypoint.Spread: its ctx is cancelled with cause
// entrypoint.ErrStreamDrained, and a hijacked connection whose handler does not watch
// StreamContext is closed. It returns nil once every stream it reached has ended,
// however close to ctx's deadline that is.
//
// When ctx is done before the spread finished, the streams not yet reached are
// reached at once; DrainStreams then returns ctx.Err() and leaves the streams not
// yet ended to Drain.
//
// It refuses no request. Streams opened while it runs are left to Drain. Before
// Serve or after Drain began it does nothing and returns nil.
func (s *Server) DrainStreams(ctx context.Context, allowed time.Duration) error {
	s.base.Lock()
	serving := s.base.Serving()
	s.base.Unlock()
	if !serving {
		return nil
	}
	s.srv.SetKeepAlivesEnabled(false)
	list := s.streams.Snapshot(false)
	if err := entrypoint.Spread(ctx, min(s.cfg.StreamDrainWindow, allowed), list, (*stream).reach); err != nil {
		return err
	}
	return waitEnded(ctx, list)
}

// Drain stops intake and lets what was admitted finish, closing streams a few at a
// time so that their clients reconnect elsewhere gradually.
//
// In order, Drain disables keep-alives (HTTP/1 connections close after their current
// response, idle ones at once; HTTP/2 ones are sent a GOAWAY); closes the Gate, so
// that every request not yet admitted, including one arriving on a connection that
// is already open, is answered 503 with Retry-After, Connection: close and the JSON
// body {"code":"draining",…}; closes the listener; and spreads the closing of the
// streams still open over min(StreamDrainWindow, the time left on ctx) with
// entrypoint.Spread, as DrainStreams does.
//
// Closing a listening socket makes the kernel reset the connections it completed
// and queued but the server had not accepted yet. So when the listener is a
// *net.TCPListener or *net.UnixListener (on Linux), Drain first accepts, without
// waiting, every connection queued, and closes the socket once none is left: each
// of those clients gets its 503 draining answer. Only a connection whose handshake
// completes in the microseconds between that last accept and the close is still
// reset by the kernel; it is rare, as the Host waits out the drain delay before
// Drain, so that load balancers have stopped sending new connections by then.
// net/http closes without an answer an HTTP/1 connection whose request it reads
// once http.Server.Shutdown has begun, so Drain starts Shutdown (which sends HTTP/2
// connections their GOAWAY) only once no HTTP/1 connection is waiting for, reading
// or answering a request. Any other listener, such as one made by tls.NewListener
// and given with WithListener, is closed at once as Drain begins: its queue, if
// it has one, is reset. (The connections, the cap and the backlog are followed
// by a conntrack.Tracker.)
//
// It then waits, without polling, until every admitted request has returned, every
// hijacked connection is closed and no connection is reading or answering a
// request, and closes the idle connections left. It returns nil once all that is
// done, however close to ctx's deadline: a drain that finished is never reported as
// a timeout.
//
// When ctx is done first, Drain returns an error wrapping ctx.Err() that tells how
// much is still in flight, and leaves it to Stop; the listener is closed by then, or
// Stop closes it.
//
// A client that pipelined HTTP/1.1 requests behind the one being answered when Drain
// began gets that answer, with Connection: close, and then the end of the
// connection (a FIN, not a reset, so that no answer already sent is lost): the
// requests behind it are not answered, as RFC 9112 §9.3.2 allows, and the client
// may retry them. They are counted in DrainReport and logged, so that they appear
// in the shutdown report. Over TLS they are not counted.
//
// Drain cancels the ctx of streams only, not of other requests, and closes no
// hijacked connection whose handler watches StreamContext: it waits for them. A
// client slow to send its request is bounded by ReadHeaderTimeout and ReadTimeout,
// not cut by Drain. Before Serve it closes the listener and returns nil; after Stop
// it does nothing.
func (s *Server) Drain(ctx context.Context) error {
	s.base.Lock()
	turn := s.base.Drain()
	done := s.serveDone
	s.base.Unlock()
	switch turn {
	case entrypoint.Idle:
		return nil
	case entrypoint.Unserved:
		s.gate.Close()
		return s.closeListener()
	}

	s.srv.SetKeepAlivesEnabled(false)
	s.gate.Close()
	// The queued connections are handed over, and the listener closed, only once
	// the Gate refuses: each of them is answered 503 draining.
	s.conns.t.DrainBacklog()
	close(s.draining)
	list := s.streams.Snapshot(true)

	// Shutdown closes the idle connections and sends HTTP/2 connections a GOAWAY;
	// its polling for the rest is cut short once the waits below saw everything
	// finish. Once shutting down, net/http closes an HTTP/1 connection whose request
	// it reads without answering it; so every queued connection is handed over, and
	// every HTTP/1 request answered, first.
	shutCtx, endShutdown := context.WithCancel(ctx)
	defer endShutdown()
	shut := make(chan error, 1)
	go func() {
		if wait.Await(shutCtx, done) == nil {
			s.conns.waitH1(shutCtx) // its error is ctx's, which the waits below report
		}
		shut <- s.srv.Shutdown(shutCtx)
	}()

	spreadErr := entrypoint.Spread(ctx, s.cfg.StreamDrainWindow, list, (*stream).reach)
	waitErr := s.gate.Wait(ctx) // admitted requests, and hijacked connections
	if waitErr == nil {
		// Serve has returned once the listener is closed, so every connection it
		// accepted is tracked by now.
		waitErr = wait.Await(ctx, done)
	}
	if waitErr == nil {
		waitErr = s.conns.wait(ctx) // requests being read or answered, not yet admitted
	}
	endShutdown()
	shutErr := <-shut

	if spreadErr != nil || waitErr != nil {
		// Each figure once: a request is admitted and its connection busy both.
		return fmt.Errorf("%s: drain: %d requests still in flight (hijacked connections included), %d connections busy: %w",
			s.cfg.Name, s.InFlight(), s.conns.busyCount(), ctx.Err())
	}
	s.srv.Close() // the idle connections; none is busy, so nothing is cut
	if n := s.conns.unanswered.Load(); n > 0 {
		s.log.Warn("pipelined HTTP/1.1 requests left unanswered by the drain; their clients may retry them",
			zap.Uint64("pipelined_unanswered", n))
	}
	if shutErr != nil && !errors.Is(shutErr, context.Canceled) && !errors.Is(shutErr, context.DeadlineExceeded) {
		return fmt.Errorf("%s: drain: %w", s.cfg.Name, shutErr)
	}
	if err := s.takeServeErr(); err != nil { // failed after Serve returned, unreported
		return fmt.Errorf("%s: serve: %w", s.cfg.Name, err)
	}
	return nil
}

// Stop cuts off whatever Drain left: it closes the Gate, calls http.Server.Close,
// which closes the listener and every connection (each running handler's ctx is
// cancelled), cancels every stream's ctx with cause entrypoint.ErrStreamDrained and
// closes every hijacked connection, watched or not. It then waits for the running
// handlers to return and returns nil.
//
// When ctx is done first, Stop returns an error wrapping ctx.Err() that tells how
// many handlers are still running; they are left running (a handler that ignores its
// ctx and its writes failing cannot be stopped from outside).
//
// Stop may be called without Drain, and more than once. Before Serve it closes the
// listener; before Bind it does nothing.
func (s *Server) Stop(ctx context.Context) error {
	s.base.Lock()
	turn := s.base.Stop()
	done := s.serveDone
	s.base.Unlock()
	switch turn {
	case entrypoint.Idle:
		return nil
	case entrypoint.Unserved:
		s.gate.Close()
		return s.closeListener()
	}
	s.cutAll()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("%s: stop: http.Server did not return: %w", s.cfg.Name, ctx.Err())
	}
	if err := s.gate.Wait(ctx); err != nil {
		return fmt.Errorf("%s: stop: %d handlers still running: %w", s.cfg.Name, s.InFlight(), err)
	}
	return nil
}

// cutAll closes everything at once: the Gate, the http.Server with its connections,
// and every stream.
func (s *Server) cutAll() {
	s.gate.Close()
	s.srv.Close() // its only error is the listener's, closed by Drain already or now
	for _, st := range s.streams.Snapshot(true) {
		st.cut()
	}
}

func (s *Server) closeListener() error { return transport.CloseListener(s.ln, s.cfg.Name) }

var _ entrypoint.DrainReporter = (*Server)(nil)

// DrainReport says what the drain moved off, refused and left unanswered, for the
// shutdown report: "moved_off=12 refused_draining=3 pipelined_unanswered=95".
// moved_off counts the connections told, once readiness was withdrawn, to close
// after their answer (see Serve); refused_draining the
// requests answered 503 draining; pipelined_unanswered the HTTP/1.1 requests a
// client had pipelined behind one the drain answered, which the connection's close
// left unanswered (see Drain). Then what the connection cap (MaxConns) held back,
// "conns_max=384 conns_peak=384 accept_paused=3 paused_for=12.5s", and how many
// connections waiting in the listen backlog Drain answered 503 draining
// ("backlog_answered=716").
func (s *Server) DrainReport() string {
	r := fmt.Sprintf("moved_off=%d refused_draining=%d pipelined_unanswered=%d %s",
		s.movedOff.Load(), s.refused.Load(), s.conns.unanswered.Load(), s.capped.Report())
	if n := s.conns.t.Stats().BacklogAnswered; n > 0 {
		r += fmt.Sprintf(" backlog_answered=%d", n)
	}
	return r
}
