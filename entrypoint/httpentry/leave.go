package httpentry

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/servicewright/servicewright/health"
)

var _ health.MonitorUser = (*Server)(nil)

// UseMonitor makes the Server follow m, the Host's readiness: from the moment m
// says draining (the stop, Host.BeginDraining, PreStop), the Server moves its
// clients off (see Serve). The Host calls it at registration. A nil m, or a call
// once the Server is bound, does nothing.
func (s *Server) UseMonitor(m *health.Monitor) {
	s.base.Lock()
	defer s.base.Unlock()
	if m == nil || !s.base.Unbound() {
		return
	}
	s.monitor = m
}

// follow subscribes to the Monitor, if any, for the life of Serve: a verdict of
// draining moves the clients off. It returns what ends the subscription.
func (s *Server) follow() (unsubscribe func()) {
	if s.monitor == nil {
		return func() {}
	}
	return s.monitor.Subscribe(func(r health.Answer) {
		if r.Status == health.AnswerDraining {
			s.moveOff()
		}
	})
}

// moveOff starts moving the clients off, once: from now on every response carries
// Connection: close (see serveHTTP).
func (s *Server) moveOff() {
	if s.leaving.CompareAndSwap(false, true) {
		s.log.Info("readiness withdrawn: every response now closes its connection, so that keep-alive clients reconnect through their balancer")
	}
}

// leave marks a response to close its connection while the Server moves its
// clients off: an HTTP/1 connection closes after it, an HTTP/2 one is sent a
// GOAWAY (net/http turns the header into one) and closes once its streams end.
// Each connection is counted once. A request that asks to upgrade its connection
// is left alone: its handler writes the Connection header itself.
func (s *Server) leave(w http.ResponseWriter, r *http.Request) {
	if len(r.Header["Upgrade"]) > 0 {
		return
	}
	w.Header().Set("Connection", "close")
	if c := connOf(r.Context()); c != nil && c.movedOff.CompareAndSwap(false, true) {
		s.movedOff.Add(1)
	}
}

// connKey finds a connection's *connCtx in the ctx of its requests.
type connKey struct{}

// connCtx is what the Server keeps of a connection in its requests' ctx.
type connCtx struct {
	// cancel cancels the ctx of every request on the connection; the drain uses it
	// to end an HTTP/1 stream recognised only by its response (stream.go).
	cancel   context.CancelCauseFunc
	movedOff atomic.Bool // told to close by leave
}

// connContext is the http.Server's ConnContext: each connection's requests get a
// ctx the Server can cancel, and a *connCtx.
func connContext(ctx context.Context, _ net.Conn) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	return context.WithValue(ctx, connKey{}, &connCtx{cancel: cancel})
}

// connOf returns the *connCtx of the connection a request's ctx belongs to, or nil.
func connOf(ctx context.Context) *connCtx {
	c, _ := ctx.Value(connKey{}).(*connCtx)
	return c
}
