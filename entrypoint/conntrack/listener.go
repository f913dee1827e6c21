package conntrack

import (
	"net"
	"time"
)

// Listener is a listener followed by a Tracker: see Tracker.Listener.
type Listener struct {
	t       *Tracker
	sock    net.Listener // as given
	backlog *backlog     // sock taken over; nil when it could not be
	inner   net.Listener // what Accept reads: the backlog or sock, under the cap or layer
}

// Accept waits for the next connection and returns it as a *Conn, busy. Once
// DrainBacklog began it returns the connections queued, without waiting, and then
// an error wrapping net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.AcceptConn()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AcceptConn is Accept returning the *Conn itself. A connection taken from the
// queue once DrainBacklog began may read for Config.BacklogReadTimeout only.
func (l *Listener) AcceptConn() (*Conn, error) {
	l.t.accepting.Store(true)
	nc, err := l.inner.Accept()
	if err != nil {
		return nil, err
	}
	var readBy time.Time
	if l.backlog != nil && l.backlog.state.Load() != backlogServing { // taken from the queue by the drain
		readBy = time.Now().Add(l.t.cfg.BacklogReadTimeout)
		_ = nc.SetReadDeadline(readBy)
	}
	return l.t.follow(nc, readBy), nil
}

// Close closes the socket, unless DrainBacklog began: then Accept closes it once
// the queue is empty. Connections already accepted stay open.
func (l *Listener) Close() error { return l.inner.Close() }

// Addr returns the socket's address.
func (l *Listener) Addr() net.Addr { return l.sock.Addr() }

// closeSocket closes the socket whatever the drain, and wakes an Accept waiting at
// the cap.
func (l *Listener) closeSocket() error {
	var err error
	if l.backlog != nil {
		err = l.backlog.closeSocket()
	} else {
		err = l.sock.Close()
	}
	_ = l.inner.Close() // the cap's, to wake an Accept waiting for a place
	return err
}
