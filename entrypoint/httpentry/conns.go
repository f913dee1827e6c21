package httpentry

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/servicewright/servicewright/entrypoint/conntrack"
)

// connSet follows the state of the http.Server's connections through a
// conntrack.Tracker, so that Drain learns the moment none is busy instead of
// polling for it as http.Server.Shutdown does (up to 500 ms apart, which turns a
// drain that finished into a timeout when the grace is short), and so that the
// connections queued in the listen backlog are answered rather than reset.
//
// An HTTP/1 connection is busy while it is new (accepted, its first request not read
// yet) or active (a request is being read, handled or answered); it is quiet once
// idle, hijacked (the Gate follows it from then on: Detach) or closed. A new
// connection that never sends a request is closed by ReadHeaderTimeout, so a busy
// one always ends. An HTTP/2 connection is busy until it is closed (Multiplexed):
// between two streams it may still be flushing the last response, and Shutdown's
// GOAWAY makes it close itself once its streams are done.
type connSet struct {
	t *conntrack.Tracker
	// unanswered counts the pipelined requests left unread on connections the
	// drain closed (pipeConn).
	unanswered atomic.Uint64
}

// newConnSet returns a connSet whose connections are capped by capped (the
// Server's ConnCap, which also serves its metrics).
func newConnSet(name string, capped func(net.Listener) net.Listener) (*connSet, error) {
	t, err := conntrack.New(conntrack.Config{Name: name}, conntrack.WithListenerLayer(capped))
	if err != nil {
		return nil, err
	}
	return &connSet{t: t}, nil
}

// track is the http.Server's ConnState hook. A request's moves between busy and
// idle are an atomic swap on its connection, with no lock and nothing shared with
// other connections until the drain counts them (conntrack.Conn); it allocates
// nothing.
func (cs *connSet) track(c net.Conn, state http.ConnState) {
	tc := trackedConn(c)
	if tc == nil {
		return
	}
	switch state {
	case http.StateActive:
		// net/http reports StateActive after the TLS handshake, so the protocol is
		// negotiated by then.
		if tlc, ok := c.(*tls.Conn); ok && tlc.ConnectionState().NegotiatedProtocol == "h2" {
			tc.Multiplexed()
		}
		tc.Busy()
	case http.StateIdle:
		if hc, ok := c.(*headConn); ok {
			hc.reset() // the next request's head is scanned
		}
		tc.Idle() // an HTTP/2 one stays busy
	case http.StateHijacked:
		tc.Detach()
	} // StateNew: busy since its accept; StateClosed: closed by net/http already
}

// trackedConn returns the *conntrack.Conn under c: c is that, or a headConn over
// a pipeConn over it, or a *tls.Conn over it.
func trackedConn(c net.Conn) *conntrack.Conn {
	if tlc, ok := c.(*tls.Conn); ok {
		c = tlc.NetConn()
	}
	if hc, ok := c.(*headConn); ok {
		c = hc.Conn
	}
	if pc, ok := c.(*pipeConn); ok {
		c = pc.Conn
	}
	tc, _ := c.(*conntrack.Conn)
	return tc
}

// busyCount reports how many connections are busy.
func (cs *connSet) busyCount() int { return cs.t.Busy() }

// wait returns nil as soon as no connection is busy, or ctx.Err() if ctx is done
// first. A connection accepted later makes no difference to a wait that returned.
func (cs *connSet) wait(ctx context.Context) error { return cs.t.Wait(ctx) }

// waitH1 returns nil as soon as no connection that may be HTTP/1 is busy: each has
// had its requests answered, or is closed, idle or hijacked. A TLS connection counts
// until its handshake chose HTTP/2. It returns ctx.Err() if ctx is done first.
func (cs *connSet) waitH1(ctx context.Context) error { return cs.t.WaitSerial(ctx) }
