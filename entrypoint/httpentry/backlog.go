package httpentry

import (
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"
)

// maxBacklogDrain bounds how many connections a draining backlogListener takes from
// its queue, so that clients that keep connecting cannot hold a drain open. It is
// above any backlog the kernel keeps for one socket in practice.
const maxBacklogDrain = 1 << 16

// The states of a backlogListener.
const (
	backlogServing  int32 = iota // accepting as usual
	backlogDraining              // handing over what is queued, without waiting
	backlogClosed                // the socket is closed
)

// backlogListener is the listener the http.Server serves when the Server's own is a
// *net.TCPListener or a *net.UnixListener (http.Server.ServeTLS layers TLS on top
// of it). It exists so that Drain does not cut the connections the kernel has
// already completed and queued in the socket's backlog: closing a listening socket
// resets each of them, and a client that sent its request on one reads "connection
// reset by peer" or an empty reply.
//
// While serving, Accept passes straight through to the socket: it adds no lock and
// no allocation, and looks at its state only when the socket's Accept fails.
//
// drain, which Drain calls once the Gate is closed and before http.Server.Shutdown,
// marks the listener draining and sets a deadline in the past on the socket, which
// wakes the accept loop at once. From then on each Accept takes one connection from
// the queue with a non-blocking accept(2) and hands it to the http.Server, which
// serves it as any other: its request is answered 503 draining with Connection:
// close. Once accept(2) finds the queue empty, Accept closes the socket and returns
// http.ErrServerClosed, so that Serve returns. Between that last accept(2) and the
// close a few microseconds pass: a connection whose handshake completes in that
// window is still reset by the kernel. It is rare, because the Host withdraws
// readiness and waits out the drain delay before Drain, so load balancers have
// stopped sending new connections by then.
//
// After maxBacklogDrain connections it closes the socket without waiting for the
// queue to empty; if accept(2) fails otherwise (out of file descriptors), it closes
// the socket at once, as before. Close, which http.Server.Shutdown and Close call,
// closes the socket unless drain began (then Accept does). If Serve returns before
// the queue was emptied, the func takeOver returned closes the socket.
type backlogListener struct {
	net.Listener                                           // the socket: *net.TCPListener or *net.UnixListener
	deadline     interface{ SetDeadline(time.Time) error } // the same socket
	raw          syscall.RawConn                           // the same socket, for accept(2)
	state        atomic.Int32
	drainBegan   chan struct{} // closed by drain
	taken        int           // connections taken from the queue while draining; the accept loop's alone
}

// takeOver returns the listener for the http.Server to serve in place of ln, and a
// func to call once Serve returned, which closes the socket if it is still open. It
// records the listener in s.backlog for Drain.
//
// When ln is not a socket it can take over (any other net.Listener, such as one
// made by tls.NewListener and given with WithListener, or on a platform without a
// non-blocking accept(2)), it returns ln itself and a func that does nothing:
// Drain then closes ln through http.Server.Shutdown, resetting its backlog.
func (s *Server) takeOver(ln net.Listener) (net.Listener, func()) {
	var deadline interface{ SetDeadline(time.Time) error }
	var sc syscall.Conn
	switch l := ln.(type) {
	case *net.TCPListener:
		deadline, sc = l, l
	case *net.UnixListener:
		deadline, sc = l, l
	default:
		return ln, func() {}
	}
	if !canAcceptQueued {
		return ln, func() {}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return ln, func() {}
	}
	bl := &backlogListener{Listener: ln, deadline: deadline, raw: raw, drainBegan: make(chan struct{})}
	s.mu.Lock()
	s.backlog = bl
	s.mu.Unlock()
	return bl, func() { bl.closeSocket() }
}

// Accept returns the socket's next connection. Once drain began, it returns one
// that is queued already, without waiting, or http.ErrServerClosed once none is
// left.
func (l *backlogListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil || l.state.Load() == backlogServing {
		return c, err
	}
	return l.acceptQueued(err)
}

// acceptQueued takes a connection from the queue; when none is left, or it has
// taken maxBacklogDrain, or accept(2) fails, it closes the socket and returns
// http.ErrServerClosed. Once the socket is closed it returns err, the socket's.
// Only the accept loop calls it.
func (l *backlogListener) acceptQueued(err error) (net.Conn, error) {
	if l.state.Load() != backlogDraining {
		return nil, err
	}
	if l.taken < maxBacklogDrain {
		if c, _ := acceptQueued(l.raw); c != nil {
			l.taken++
			return c, nil
		}
	}
	l.closeSocket()
	return nil, http.ErrServerClosed
}

// drain starts handing over the queued connections: it wakes the accept loop,
// whose Accept then takes them without waiting and closes the socket. It does not
// wait for that. It does nothing once the socket is closed.
func (l *backlogListener) drain() {
	if !l.state.CompareAndSwap(backlogServing, backlogDraining) {
		return
	}
	defer close(l.drainBegan)
	if err := l.deadline.SetDeadline(time.Unix(1, 0)); err != nil { // passed: a blocked Accept returns
		l.closeSocket()
	}
}

// Close closes the socket, unless drain began: then Accept closes it once the
// queue is empty.
func (l *backlogListener) Close() error {
	if l.state.Load() == backlogDraining {
		return nil
	}
	return l.closeSocket()
}

// closeSocket closes the socket, once.
func (l *backlogListener) closeSocket() error {
	if l.state.Swap(backlogClosed) == backlogClosed {
		return nil
	}
	return l.Listener.Close()
}
