package conntrack

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/servicewright/servicewright/internal/transport"
)

// maxResidue bounds what a closing connection reads of the input left unread on
// it, so that a client that keeps sending cannot hold the close.
const maxResidue = 64 << 10

// errLateInput is what Read returns for input that arrived once the drain had
// decided to close the connection: the goodbye is on its way instead of an answer.
var errLateInput = errors.New("conntrack: input arrived after the drain's goodbye")

// The states of a Conn.
const (
	stateBusy     int32 = iota // new, or handling a request: the drain waits for it
	stateIdle                  // between requests: the drain may close it
	stateClosing               // the drain is sending its goodbye and closing it; still busy
	stateDetached              // handed over (hijacked): no longer followed
	stateClosed
)

// Conn is a connection accepted through a Tracker's Listener. It is busy from its
// accept, while its first request is awaited and read, and idle once the
// entrypoint calls Idle after answering; the bytes of the next request make it busy
// again (Read does it, before the entrypoint sees them), as does Busy. The drain
// waits for busy connections and closes idle ones.
//
// Read, Write and the deadlines are the underlying connection's, except that a
// connection the drain took from the accept queue reads only until its own
// deadline (Config.BacklogReadTimeout), whatever read deadline is set. Busy, Idle,
// Multiplexed and Detach may be called from any goroutine, and none allocates.
// Until the Tracker's counts are kept (from the first Drain, Wait or WaitSerial),
// the moves between busy and idle — two a request — are one atomic swap of the
// connection's own state, with no lock and nothing shared with other connections.
type Conn struct {
	net.Conn // below: the socket, or the cap's wrapper of it
	t        *Tracker
	seq      uint64 // accept order, for the drain's oldest-first closing

	state atomic.Int32 // busy ⇄ idle move by compare-and-swap, without mu
	mux   atomic.Bool  // Multiplexed: busy until closed, not in the serial Gate

	// readBy, when set, is the time after which no read succeeds: the connection was
	// taken from the accept queue by the drain (Config.BacklogReadTimeout). It is set
	// before Accept returns the Conn and never changes.
	readBy time.Time

	mu          sync.Mutex // guards the other transitions and the counts below
	leave       func()     // the busy Gate's leave, while counted there
	serialLeave func()     // the serial Gate's leave, while counted there
}

// Read reads from the connection. When it returns bytes on an idle connection, the
// connection is busy before the caller sees them, so the drain never closes a
// connection whose next request is in hand. Bytes that arrive after the drain has
// decided to close the connection (its goodbye is being sent) are not returned:
// Read returns an error wrapping net.ErrClosed, and the Tracker counts them as late
// input.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.state.Load() != stateBusy && !c.active() {
		return 0, errors.Join(errLateInput, net.ErrClosed)
	}
	return n, err
}

// active makes an idle connection busy on input, and reports whether the input may
// be handed on: false once the drain is closing the connection.
func (c *Conn) active() bool {
	for {
		switch c.state.Load() {
		case stateIdle:
			if c.state.CompareAndSwap(stateIdle, stateBusy) {
				c.moved()
				return true
			}
		case stateClosing, stateClosed:
			c.t.lateInput.Add(1)
			return false
		default:
			return true
		}
	}
}

// SetReadDeadline sets the underlying connection's read deadline, brought forward
// to the connection's own limit when the drain took it from the accept queue
// (Config.BacklogReadTimeout).
func (c *Conn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.readDeadline(t))
}

// SetDeadline sets the underlying connection's deadlines, the read one brought
// forward as SetReadDeadline does.
func (c *Conn) SetDeadline(t time.Time) error {
	if c.readBy.IsZero() {
		return c.Conn.SetDeadline(t)
	}
	return errors.Join(c.Conn.SetWriteDeadline(t), c.Conn.SetReadDeadline(c.readDeadline(t)))
}

// readDeadline is t, or readBy when that comes first (a zero t is no deadline).
func (c *Conn) readDeadline(t time.Time) time.Time {
	if !c.readBy.IsZero() && (t.IsZero() || t.After(c.readBy)) {
		return c.readBy
	}
	return t
}

// Busy marks the connection busy: a request is being read, handled or answered.
// Read does it already when the request's bytes arrive; call Busy when work begins
// without input (a request already buffered). It does nothing on a connection that
// is busy, closing, detached or closed.
func (c *Conn) Busy() {
	if c.state.Load() == stateIdle && c.state.CompareAndSwap(stateIdle, stateBusy) {
		c.moved()
	}
}

// Idle marks the connection idle: its last request is answered and nothing of the
// next one has been read. With a bufio.Reader, call it only when Buffered() is 0:
// a request already buffered is not seen by Read, so the connection must stay busy
// for it.
//
// Once the Tracker's Drain began, Idle closes the connection instead: it writes
// Config.Goodbye (bounded by Config.GoodbyeTimeout), half-closes, reads what is
// left unread without waiting, and closes, on the caller's goroutine; the
// caller's next Read fails with net.ErrClosed. A multiplexed connection stays
// busy; Idle does nothing on one that is closing, detached or closed.
func (c *Conn) Idle() {
	if c.mux.Load() {
		return
	}
	swapped := false
	if !c.t.draining.Load() {
		if !c.state.CompareAndSwap(stateBusy, stateIdle) {
			return
		}
		if !c.t.draining.Load() && !c.mux.Load() {
			c.moved()
			return
		}
		// The drain began, or the connection turned multiplexed, as it went idle:
		// settle it under the lock, as if the swap had not been made.
		swapped = true
	}
	c.mu.Lock()
	// The state this Idle left, if nothing moved it since: idle after the swap, busy
	// without one. Anything else — the drain claimed it, input made it busy again,
	// it was closed — is someone else's move, and this Idle's is done.
	left := stateBusy
	if swapped {
		left = stateIdle
	}
	switch {
	case c.state.Load() != left:
		c.recount()
		c.mu.Unlock()
		return
	case c.mux.Load():
		c.move(left, stateBusy) // multiplexed: busy until closed
		c.mu.Unlock()
		return
	case !c.move(left, stateClosing):
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.t.closedAfterAnswer.Add(1)
	c.goodbye()
}

// Multiplexed marks a connection that carries many requests at once (HTTP/2): it
// stays busy until it is closed, whatever Idle says, and it no longer counts for
// Tracker.WaitSerial. The protocol's own goodbye (a GOAWAY) is what ends it.
func (c *Conn) Multiplexed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mux.Load() {
		return
	}
	if c.serialLeave != nil {
		c.serialLeave()
		c.serialLeave = nil
	}
	c.mux.Store(true)
	if c.state.Load() == stateIdle { // an Idle that raced with this: undone
		c.move(stateIdle, stateBusy)
	}
}

// Detach stops following the connection, as when it is hijacked: it is no longer
// busy, the drain neither waits for it nor closes it, and Tracker.Close leaves it
// open. Whoever took it over closes it; its place under the connection cap is
// freed then.
func (c *Conn) Detach() {
	c.mu.Lock()
	if s := c.state.Load(); s == stateClosed || s == stateDetached {
		c.mu.Unlock()
		return
	}
	c.state.Store(stateDetached)
	c.recount()
	c.mu.Unlock()
	c.t.forget(c)
}

// Close closes the connection; it is no longer busy. Closing a closed Conn returns
// the underlying connection's error.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.mu.Lock()
	c.state.Store(stateClosed)
	c.recount()
	c.mu.Unlock()
	c.t.forget(c)
	return err
}

// CloseWrite half-closes the connection when the underlying one can (TCP, Unix),
// so that the client reads the last answer and then the end, not a reset.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom lets the underlying connection's ReadFrom (sendfile, splice) do the copy.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// SyscallConn returns the socket's raw connection, or an error when the connection
// is not a socket.
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	if sc, ok := c.NetConn().(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// NetConn returns the connection as accepted from the socket, under the cap's
// wrapper if any.
func (c *Conn) NetConn() net.Conn {
	if u, ok := c.Conn.(interface{ NetConn() net.Conn }); ok {
		return u.NetConn()
	}
	return c.Conn
}

// counted reports whether state s counts as busy.
func counted(s int32) bool { return s == stateBusy || s == stateClosing }

// moved follows a move between busy and idle made without the lock: once the
// Tracker's counts are kept, it brings them up to date.
func (c *Conn) moved() {
	if c.t.counting.Load() {
		c.mu.Lock()
		c.recount()
		c.mu.Unlock()
	}
}

// move changes the state from to to, if it is still from, and brings the counts up
// to date. c.mu must be held.
func (c *Conn) move(from, to int32) bool {
	if !c.state.CompareAndSwap(from, to) {
		return false
	}
	c.recount()
	return true
}

// recount enters or leaves the Tracker's Gates so that the connection is counted
// there exactly while its state counts as busy, once the Tracker keeps its counts
// (Tracker.count); before that it does nothing. A move without the lock is followed
// by a recount (moved), so whichever recount runs last sees the final state.
// c.mu must be held.
func (c *Conn) recount() {
	if !c.t.counting.Load() {
		return
	}
	switch now := counted(c.state.Load()); {
	case now && c.leave == nil:
		c.leave, _ = c.t.busy.Enter() // never closed: always admits
		if !c.mux.Load() {
			c.serialLeave, _ = c.t.serial.Enter()
		}
	case !now && c.leave != nil:
		c.leave()
		c.leave = nil
		if c.serialLeave != nil {
			c.serialLeave()
			c.serialLeave = nil
		}
	}
}

// claimIdle moves an idle connection to closing and reports whether it did.
func (c *Conn) claimIdle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.move(stateIdle, stateClosing)
}

// goodbye ends a closing connection: the goodbye line, a half-close, then what the
// client sent meanwhile read without waiting (so that the close is a FIN, not the
// reset the kernel sends for unread input, which can destroy the goodbye on its
// way), then the close.
func (c *Conn) goodbye() {
	if g := c.t.cfg.Goodbye; len(g) > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.t.cfg.GoodbyeTimeout))
		_, _ = c.Conn.Write(g)
	}
	_ = c.CloseWrite()
	if len(transport.ReadQueued(c.NetConn(), maxResidue)) > 0 {
		c.t.lateInput.Add(1)
	}
	c.Close()
}
