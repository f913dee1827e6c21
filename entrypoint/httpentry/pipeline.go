package httpentry

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/servicewright/servicewright/internal/transport"
)

// maxPipelineResidue bounds what a closing connection reads of the requests left
// unread on it, so that a client that keeps sending cannot hold the close.
const maxPipelineResidue = 64 << 10

// headEnd ends an HTTP/1 request head.
var headEnd = []byte("\r\n\r\n")

// pipelineListener wraps each plaintext connection in a pipeConn, so that the
// requests a client pipelined and the drain left unanswered are counted (Drain's
// report, DrainReport) rather than lost without a trace. TLS connections are not
// wrapped: under TLS the bytes are ciphertext.
type pipelineListener struct {
	net.Listener
	cs       *connSet
	draining <-chan struct{} // closed when Drain began
}

// countPipelined returns ln wrapped in a pipelineListener, or ln itself when the
// Server serves TLS.
func (s *Server) countPipelined(ln net.Listener) net.Listener {
	if s.srv.TLSConfig != nil {
		return ln
	}
	return &pipelineListener{Listener: ln, cs: s.conns, draining: s.draining}
}

func (l *pipelineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	return &pipeConn{Conn: c, cs: l.cs, draining: l.draining}, nil
}

// pipeConn hands net/http what it reads from the socket one request head at a time:
// a Read returns the bytes up to the end of the next head ("\r\n\r\n") and keeps the
// rest for the next Read. So net/http's own buffer never holds a request the client
// pipelined behind the one being served; they wait here. Bodies are handed on as
// they come (a Read may return fewer bytes than it could; never none while some are
// waiting), so nothing is held back from a reader that asks.
//
// The socket is read straight into the caller's buffer, and in the common case —
// what arrived ends at a head end, or holds no head end (a body, a head cut across
// reads) — it is handed on as it is: no copy and no lock. Only the bytes after a
// head end that did not end the read are copied aside, under the lock that Close
// shares, and handed on by the next Reads.
//
// When net/http closes the connection after the drain began (keep-alives are off,
// so it closes after the response in progress), Close counts the heads left unread
// here and in the socket's receive queue, which it empties without waiting: those
// are pipelined requests the client sent and gets no answer to, and the close is
// then a FIN, not the reset the kernel sends for a socket closed with unread data,
// which can destroy the responses the client has not read yet. A head is counted
// once complete; a request cut off mid-head is not.
type pipeConn struct {
	net.Conn
	cs       *connSet
	draining <-chan struct{}

	// tail is the last bytes handed on (tailN of them, at most 3) since the last head
	// end, to find a head end across reads. Only the reading goroutine touches it:
	// net/http never reads a connection from two goroutines at once.
	tail  [3]byte
	tailN int

	held    atomic.Bool // pending is not empty: the next Read hands it on
	mu      sync.Mutex  // guards store and pending, which Close takes
	store   []byte      // pending's buffer, kept for the next time
	pending []byte      // read from the socket, not handed on yet: a slice of store
	once    sync.Once
}

func (c *pipeConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.held.Load() {
		return c.readPending(p), nil
	}
	n, err := c.Conn.Read(p)
	if n == 0 {
		return 0, err
	}
	end := firstHeadEnd(c.tail[:c.tailN], p[:n])
	if end < 0 || end == n {
		c.handed(p[:n], end == n)
		return n, err
	}
	// A head ended inside what was read: what follows it waits here. An error that
	// came with the bytes comes back on the Read after them.
	c.mu.Lock()
	c.store = append(c.store[:0], p[end:n]...)
	c.pending = c.store
	c.held.Store(true)
	c.mu.Unlock()
	c.tailN = 0
	return end, nil
}

// readPending hands on what Read kept aside, up to the next head end.
func (c *pipeConn) readPending(p []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	end, found := len(c.pending), false
	if i := firstHeadEnd(c.tail[:c.tailN], c.pending); i >= 0 {
		end, found = i, true
	}
	n := copy(p, c.pending[:end])
	c.handed(c.pending[:n], found && n == end)
	c.pending = c.pending[n:]
	if len(c.pending) == 0 {
		c.held.Store(false)
	}
	return n
}

// handed records the bytes b just handed on: ended says they end at a head end, so
// that the next head starts afresh; otherwise their last bytes join the tail.
func (c *pipeConn) handed(b []byte, ended bool) {
	if ended {
		c.tailN = 0
		return
	}
	if len(b) >= len(c.tail) {
		c.tailN = copy(c.tail[:], b[len(b)-len(c.tail):])
		return
	}
	keep := min(c.tailN, len(c.tail)-len(b)) // of the old tail, before b
	copy(c.tail[:], c.tail[c.tailN-keep:c.tailN])
	c.tailN = keep + copy(c.tail[keep:], b)
}

// firstHeadEnd returns the index in next just past the first "\r\n\r\n" that ends
// there, counting the bytes of prev (at most 3) as coming before next, or -1.
func firstHeadEnd(prev, next []byte) int {
	for k := len(prev); k > 0; k-- { // a head end that begins in prev
		need := headEnd[k:]
		if bytes.HasSuffix(prev, headEnd[:k]) && bytes.HasPrefix(next, need) {
			return len(need)
		}
	}
	if i := bytes.Index(next, headEnd); i >= 0 {
		return i + len(headEnd)
	}
	return -1
}

// Close counts the requests left unanswered when the drain closes the connection
// (see pipeConn), then closes it.
func (c *pipeConn) Close() error {
	c.once.Do(func() {
		select {
		case <-c.draining:
		default:
			return
		}
		c.mu.Lock()
		rest := append([]byte(nil), c.pending...)
		c.pending = nil
		c.held.Store(false)
		c.mu.Unlock()
		rest = append(rest, transport.ReadQueued(c.Conn, maxPipelineResidue)...)
		if n := bytes.Count(rest, headEnd); n > 0 {
			c.cs.unanswered.Add(uint64(n))
		}
	})
	return c.Conn.Close()
}

// CloseWrite keeps net/http's half-close (a FIN before the close) working.
func (c *pipeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps the socket's sendfile/splice path for responses served from files.
func (c *pipeConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
