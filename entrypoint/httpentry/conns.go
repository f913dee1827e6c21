package httpentry

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/servicewright/servicewright/entrypoint"
)

// connSet follows the state of the http.Server's connections, so that Drain learns
// the moment none is busy instead of polling for it as http.Server.Shutdown does (up
// to 500 ms apart, which turns a drain that finished into a timeout when the grace is
// short).
//
// An HTTP/1 connection is busy while it is new (accepted, its first request not read
// yet) or active (a request is being read, handled or answered); it is quiet once
// idle, hijacked (the Gate follows it from then on) or closed. A new connection that
// never sends a request is closed by ReadHeaderTimeout, so a busy one always ends. An
// HTTP/2 connection is busy until it is closed: between two streams it may still be
// flushing the last response, and Shutdown's GOAWAY makes it close itself once its
// streams are done.
type connSet struct {
	mu      sync.Mutex
	conns   map[net.Conn]connInfo // the connections not closed or hijacked
	busy    entrypoint.Gate       // one unit per busy connection; never closed
	leave   func()                // the Gate's leave, the same for every unit
	h1      entrypoint.Gate       // one unit per busy connection not known to be HTTP/2
	h1Leave func()
	// unanswered counts the pipelined requests left unread on connections the
	// drain closed (pipeConn).
	unanswered atomic.Uint64
}

type connInfo struct {
	busy    bool
	h1      bool // counted in connSet.h1
	checked bool // whether it is HTTP/2 is known
	h2      bool
}

// track is the http.Server's ConnState hook.
func (cs *connSet) track(c net.Conn, state http.ConnState) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.conns == nil {
		cs.conns = make(map[net.Conn]connInfo)
	}
	info := cs.conns[c]
	switch state {
	case http.StateNew, http.StateActive:
		if state == http.StateActive && !info.checked {
			// net/http reports StateActive after the TLS handshake, so the
			// protocol is negotiated by then.
			if tc, ok := c.(*tls.Conn); ok {
				info.h2 = tc.ConnectionState().NegotiatedProtocol == "h2"
			}
			info.checked = true
		}
		cs.setBusy(&info, true)
		cs.conns[c] = info
	case http.StateIdle:
		cs.setBusy(&info, info.h2)
		cs.conns[c] = info
	default: // StateHijacked, StateClosed
		cs.setBusy(&info, false)
		delete(cs.conns, c)
	}
}

// setBusy marks info busy or not, counting it in the Gates. Called with mu held.
func (cs *connSet) setBusy(info *connInfo, busy bool) {
	switch {
	case busy && !info.busy:
		cs.leave, _ = cs.busy.Enter() // an open Gate always admits
	case !busy && info.busy:
		cs.leave()
	}
	info.busy = busy
	switch h1 := busy && !info.h2; {
	case h1 && !info.h1:
		cs.h1Leave, _ = cs.h1.Enter()
	case !h1 && info.h1:
		cs.h1Leave()
	}
	info.h1 = busy && !info.h2
}

// busyCount reports how many connections are busy.
func (cs *connSet) busyCount() int { return cs.busy.InFlight() }

// wait returns nil as soon as no connection is busy, or ctx.Err() if ctx is done
// first. A connection accepted later makes no difference to a wait that returned.
func (cs *connSet) wait(ctx context.Context) error { return cs.busy.Wait(ctx) }

// waitH1 returns nil as soon as no connection that may be HTTP/1 is busy: each has
// had its requests answered, or is closed, idle or hijacked. A TLS connection counts
// until its handshake chose HTTP/2. It returns ctx.Err() if ctx is done first.
func (cs *connSet) waitH1(ctx context.Context) error { return cs.h1.Wait(ctx) }
