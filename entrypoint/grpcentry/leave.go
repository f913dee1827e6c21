package grpcentry

import (
	"encoding/binary"
	"math"
	"sync"
	"time"
)

// moveOff sends every connection open now a GOAWAY, once.
func (s *Server) moveOff() {
	if s.resets != nil {
		s.resets.leaving.withdraw()
	}
}

// The states of guardedConn.leave.
const (
	leaveNone    = 0
	leaveDue     = 1 // to be written at the next frame boundary of the server's writes
	leaveWritten = 2
)

// errCodeNo is HTTP/2's NO_ERROR: a GOAWAY that asks the client to go, not an error.
const errCodeNo = 0x0

// leaving lists the open connections, so that the withdrawal of readiness can send
// each a GOAWAY: the client opens its next streams on a new connection, which its
// balancer sends to a ready replica, while the streams it has here finish. A
// connection accepted afterwards (the balancer had not noticed yet) is not sent one
// until Drain's GracefulStop: a client told to leave every connection it opens
// would reconnect here in a loop, serving nothing, for as long as the balancer
// still sends it here.
type leaving struct {
	mu    sync.Mutex
	conns map[*guardedConn]struct{}
	on    bool // readiness is withdrawn
	moved int  // connections sent the GOAWAY
}

// add lists c until readiness is withdrawn.
func (l *leaving) add(c *guardedConn) {
	c.set = l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		return
	}
	if l.conns == nil {
		l.conns = make(map[*guardedConn]struct{})
	}
	l.conns[c] = struct{}{}
}

func (l *leaving) remove(c *guardedConn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// withdraw sends every connection listed the GOAWAY, once; later calls do nothing.
func (l *leaving) withdraw() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		return
	}
	l.on = true
	for c := range l.conns {
		l.moved++
		c.goAway()
	}
	l.conns = nil
}

// movedOff reports how many connections were sent the GOAWAY.
func (l *leaving) movedOff() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.moved
}

// goAway has the connection sent a GOAWAY (NO_ERROR, last stream 2³¹−1: every
// stream the client opened, or opens before it reads the frame, is still served):
// now if the server is between two frames of its own, else as the server's write
// under way ends a frame. It never waits for the server's writes: whoever holds the
// write lock looks again once it lets go (Write).
func (c *guardedConn) goAway() {
	c.leave.CompareAndSwap(leaveNone, leaveDue)
	c.tryLeave()
}

// tryLeave writes a GOAWAY that is due if the write lock is free.
func (c *guardedConn) tryLeave() {
	if !c.mu.TryLock() {
		return // its holder calls tryLeave again once it lets go
	}
	defer c.mu.Unlock()
	c.writeLeaving()
}

// writeLeaving writes the GOAWAY that is due, with the write lock held, when the
// server has sent its SETTINGS and its writes end with a whole frame; otherwise
// it stays due.
func (c *guardedConn) writeLeaving() {
	if c.leave.Load() != leaveDue || !c.wrote || !c.out.boundary() || c.cut.Load() {
		return
	}
	c.leave.Store(leaveWritten)
	var f [9 + 8]byte
	binary.BigEndian.PutUint32(f[0:4], uint32(len(f)-9)<<8|frameGoAway)
	binary.BigEndian.PutUint32(f[9:13], math.MaxInt32)
	binary.BigEndian.PutUint32(f[13:17], errCodeNo)
	_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Conn.Write(f[:])
	_ = c.Conn.SetWriteDeadline(time.Time{})
}
