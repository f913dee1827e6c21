package conntrack

import (
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/servicewright/servicewright/internal/transport"
)

// maxBacklogDrain bounds how many connections a draining backlog takes from its
// queue, so that clients that keep connecting cannot hold a drain open. It is above
// any backlog the kernel keeps for one socket in practice.
const maxBacklogDrain = 1 << 16

// errBacklogAnswered is what Accept returns, once DrainBacklog began, when the
// kernel's queue is empty and the socket is closed. It wraps net.ErrClosed, so an
// accept loop that ends on net.ErrClosed ends on it as on any close.
var errBacklogAnswered = fmt.Errorf("conntrack: accept queue answered and listener closed: %w", net.ErrClosed)

// The states of a backlog.
const (
	backlogServing  int32 = iota // accepting as usual
	backlogDraining              // handing over what is queued, without waiting
	backlogClosed                // the socket is closed
)

// backlog is the listener a Tracker serves when it is given a *net.TCPListener or
// a *net.UnixListener (on Linux). It exists so that the drain does not cut the
// connections the kernel has already completed and queued in the socket's backlog:
// closing a listening socket resets each of them, and a client that sent its
// request on one reads "connection reset by peer" or nothing.
//
// While serving, Accept passes straight through to the socket: it adds no lock and
// no allocation, and looks at its state only when the socket's Accept fails.
//
// drain marks the listener draining and sets a deadline in the past on the socket,
// which wakes the accept loop at once. From then on each Accept takes one
// connection from the queue with a non-blocking accept(2) and hands it over, to be
// served as any other. Once accept(2) finds the queue empty, Accept closes the
// socket and returns errBacklogAnswered. Between that last accept(2) and the close a
// few microseconds pass: a connection whose handshake completes in that window is
// still reset by the kernel. It is rare, because the Host withdraws readiness and
// waits out the drain delay first, so load balancers have stopped sending new
// connections by then.
//
// After maxBacklogDrain connections it closes the socket without waiting for the
// queue to empty; if accept(2) fails otherwise (out of file descriptors), it closes
// the socket at once. Close closes the socket unless drain began (then Accept
// does); closeSocket always does.
type backlog struct {
	net.Listener                                           // the socket: *net.TCPListener or *net.UnixListener
	deadline     interface{ SetDeadline(time.Time) error } // the same socket
	raw          syscall.RawConn                           // the same socket, for accept(2)
	state        atomic.Int32
	drainBegan   chan struct{} // closed by drain
	emptied      chan struct{} // closed once the socket is closed
	taken        atomic.Int64  // connections taken from the queue while draining
}

// takeOver returns a backlog for ln, or nil when ln is not a socket it can take
// over (any other net.Listener, or a platform without a non-blocking accept(2)).
func takeOver(ln net.Listener) *backlog {
	var deadline interface{ SetDeadline(time.Time) error }
	var sc syscall.Conn
	switch l := ln.(type) {
	case *net.TCPListener:
		deadline, sc = l, l
	case *net.UnixListener:
		deadline, sc = l, l
	default:
		return nil
	}
	if !transport.CanAcceptQueued {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &backlog{Listener: ln, deadline: deadline, raw: raw,
		drainBegan: make(chan struct{}), emptied: make(chan struct{})}
}

// Accept returns the socket's next connection. Once drain began, it returns one
// that is queued already, without waiting, or errBacklogAnswered once none is left.
func (l *backlog) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil || l.state.Load() == backlogServing {
		return c, err
	}
	return l.acceptQueued(err)
}

// acceptQueued takes a connection from the queue; when none is left, or it has
// taken maxBacklogDrain, or accept(2) fails, it closes the socket and returns
// errBacklogAnswered. Once the socket is closed it returns err, the socket's.
func (l *backlog) acceptQueued(err error) (net.Conn, error) {
	if l.state.Load() != backlogDraining {
		return nil, err
	}
	if l.taken.Load() < maxBacklogDrain {
		if c, _ := transport.AcceptQueued(l.raw); c != nil {
			l.taken.Add(1)
			return c, nil
		}
	}
	l.closeSocket()
	return nil, errBacklogAnswered
}

// drain starts handing over the queued connections: it wakes the accept loop,
// whose Accept then takes them without waiting and closes the socket. It does not
// wait for that. It does nothing once the socket is closed.
func (l *backlog) drain() {
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
func (l *backlog) Close() error {
	if l.state.Load() == backlogDraining {
		return nil
	}
	return l.closeSocket()
}

// closeSocket closes the socket, once.
func (l *backlog) closeSocket() error {
	if l.state.Swap(backlogClosed) == backlogClosed {
		return nil
	}
	defer close(l.emptied)
	return l.Listener.Close()
}
