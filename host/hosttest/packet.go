package hosttest

import (
	"net"
	"os"
	"sync"
	"time"
)

// packetQueue is how many datagrams an end of a packet pair holds unread before it
// drops the next ones, as a full UDP receive buffer does.
const packetQueue = 64

// NewPacketPair returns two connected in-memory datagram sockets, for testing a UDP
// entrypoint inside a testing/synctest bubble: give server to the entrypoint where it
// would call net.ListenPacket, and send from client. A datagram written on one end,
// to any address, is read whole from the other, whose ReadFrom reports the writer's
// address (the other end's LocalAddr); a read buffer shorter than the
// datagram gets its head, and the rest is discarded, as with UDP.
//
// Each end queues 64 datagrams; a write to a full queue, or to an end
// that was closed, is dropped without an error, as UDP's is. A blocked ReadFrom is
// durably blocking, so virtual time advances past it; read deadlines
// (SetReadDeadline, SetDeadline) run on the bubble's clock and end a read with an
// error for which os.ErrDeadlineExceeded is true. Write deadlines are accepted and
// never expire: a write never blocks. Close ends a blocked ReadFrom with net.ErrClosed.
// The pair must be created inside the bubble that uses it.
func NewPacketPair() (server, client net.PacketConn) {
	s := newPacketEnd(memAddr("hosttest-udp-server:0"))
	c := newPacketEnd(memAddr("hosttest-udp-client:0"))
	s.peer, c.peer = c, s
	return s, c
}

type datagram struct {
	b    []byte
	from net.Addr
}

// packetEnd is one end of a pair: its queue, and its peer to write to.
type packetEnd struct {
	addr   net.Addr
	peer   *packetEnd
	queue  chan datagram
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	deadline chan struct{} // closed when the read deadline passes; replaced once expired
	timer    *time.Timer
	gen      int // counts SetReadDeadline calls: a timer of an older call does nothing
}

func newPacketEnd(addr net.Addr) *packetEnd {
	return &packetEnd{addr: addr, queue: make(chan datagram, packetQueue), closed: make(chan struct{}),
		deadline: make(chan struct{})}
}

// ReadFrom reads the next datagram into b.
func (e *packetEnd) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case <-e.closed:
		return 0, nil, e.opErr("read", net.ErrClosed)
	default:
	}
	e.mu.Lock()
	deadline := e.deadline
	e.mu.Unlock()
	select {
	case d := <-e.queue:
		return copy(b, d.b), d.from, nil
	case <-deadline:
		return 0, nil, e.opErr("read", os.ErrDeadlineExceeded)
	case <-e.closed:
		return 0, nil, e.opErr("read", net.ErrClosed)
	}
}

// WriteTo sends a copy of b to the peer, whatever addr is.
func (e *packetEnd) WriteTo(b []byte, _ net.Addr) (int, error) {
	select {
	case <-e.closed:
		return 0, e.opErr("write", net.ErrClosed)
	default:
	}
	select {
	case <-e.peer.closed: // nobody listens: lost, silently
	case e.peer.queue <- datagram{b: append([]byte(nil), b...), from: e.addr}:
	default: // the peer's queue is full: dropped
	}
	return len(b), nil
}

func (e *packetEnd) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "memory", Addr: e.addr, Err: err}
}

// Close closes this end; the peer's writes to it are dropped from then on.
func (e *packetEnd) Close() error {
	e.once.Do(func() {
		close(e.closed)
		e.mu.Lock()
		if e.timer != nil {
			e.timer.Stop()
		}
		e.mu.Unlock()
	})
	return nil
}

func (e *packetEnd) LocalAddr() net.Addr { return e.addr }

func (e *packetEnd) SetDeadline(t time.Time) error { return e.SetReadDeadline(t) }

// SetReadDeadline makes reads fail once t has passed; the zero t removes the deadline.
func (e *packetEnd) SetReadDeadline(t time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	select {
	case <-e.deadline: // expired: a new one for the next reads
		e.deadline = make(chan struct{})
	default:
	}
	if t.IsZero() {
		return nil
	}
	d := time.Until(t)
	if d <= 0 {
		close(e.deadline)
		return nil
	}
	gen := e.gen
	e.timer = time.AfterFunc(d, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.gen == gen {
			close(e.deadline)
		}
	})
	return nil
}

func (e *packetEnd) SetWriteDeadline(time.Time) error { return nil }
