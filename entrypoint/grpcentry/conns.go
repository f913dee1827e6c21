package grpcentry

import (
	"net"
	"sync"
	"sync/atomic"
)

// minMaxConnections is the least default cap on connections, whatever the limit on
// open files.
const minMaxConnections = 64

// defaultMaxConnections is Config.MaxConnections' default: a quarter of the
// process's open-file limit, at least minMaxConnections; 256 when the limit cannot be
// read.
func defaultMaxConnections() int {
	n := openFileLimit()
	if n == 0 {
		return 256
	}
	return int(max(min(n/4, 1<<20), minMaxConnections))
}

// connLimiter caps the connections a listener hands out: at the cap Accept waits
// (without accepting, so that the kernel holds new connections in the backlog) until
// one of them is closed, or the listener is.
type connLimiter struct {
	net.Listener
	slots  chan struct{} // a token per open connection
	closed chan struct{} // closed by Close
	once   sync.Once
	held   func() // counts an Accept that had to wait
}

func newConnLimiter(ln net.Listener, n int, held func()) *connLimiter {
	return &connLimiter{Listener: ln, slots: make(chan struct{}, n), closed: make(chan struct{}), held: held}
}

// Accept takes a slot, waiting for one at the cap, then accepts.
func (l *connLimiter) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.held()
		select {
		case l.slots <- struct{}{}:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close closes the listener and ends a waiting Accept.
func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Open reports the connections accepted and not yet closed.
func (l *connLimiter) Open() int { return len(l.slots) }

// limitedConn gives its slot back once, when closed.
type limitedConn struct {
	net.Conn
	closed  atomic.Bool
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if !c.closed.Swap(true) {
		c.release()
	}
	return err
}
