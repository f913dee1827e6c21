package httpentry

import (
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// Bounds of the refusal of a head (headConn.refuse).
const (
	refuseWriteTimeout = time.Second
	// refuseLinger is how long a refused connection, half-closed, reads and drops
	// what its client is still sending, at most maxHeadLinger bytes, so that the
	// close is a FIN the client reads after the answer, not a reset that can destroy
	// the answer on its way. net/http waits 500 ms after its own 431.
	refuseLinger  = 500 * time.Millisecond
	maxHeadLinger = 2 << 20
)

// headLimits are the answers of a Server's refused heads, written once, and the
// counts of them.
type headLimits struct {
	tooMany    []byte // 431, for a head with more than MaxHeaderFields fields
	badFraming []byte // 400, for a head with Content-Length and Transfer-Encoding
	maxFields  int

	refusedFields  atomic.Uint64
	refusedFraming atomic.Uint64
}

func newHeadLimits(maxFields int) *headLimits {
	return &headLimits{
		maxFields: maxFields,
		tooMany: refusal("431 Request Header Fields Too Large", `{"code":"too_many_header_fields","message":"a request may carry at most `+
			strconv.Itoa(maxFields)+` header fields"}`+"\n"),
		badFraming: refusal("400 Bad Request",
			`{"code":"ambiguous_length","message":"a request must not carry both Content-Length and Transfer-Encoding"}`+"\n"),
	}
}

// refusal is a whole HTTP/1.1 response that closes its connection.
func refusal(status, body string) []byte {
	return []byte("HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// headListener wraps each plaintext connection in a headConn. TLS connections are
// not wrapped: under TLS the bytes are ciphertext, and net/http does the handshake
// itself on the connection it is given.
type headListener struct {
	net.Listener
	limits *headLimits
}

// limitHeads returns ln wrapped in a headListener, or ln itself when the Server
// serves TLS.
func (s *Server) limitHeads(ln net.Listener) net.Listener {
	if s.srv.TLSConfig != nil {
		return ln
	}
	return &headListener{Listener: ln, limits: s.heads}
}

func (l *headListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	hc := &headConn{Conn: c, limits: l.limits, scanning: true}
	hc.scan.maxFields = l.limits.maxFields
	return hc, nil
}

// headConn is the connection net/http reads an HTTP/1 request from. While a
// request's head is read — from the accept, and again each time the connection
// turns idle (reset, from the ConnState hook) — each Read passes what it hands on
// through a headScan, before net/http parses any of it. A head with more than
// Config.MaxHeaderFields fields is answered 431, one with both Content-Length and
// Transfer-Encoding 400 (RFC 9112 §6.3: the server must close the connection after
// such a request, and net/http would keep it open), each with Connection: close;
// the connection is then half-closed, what the client still sends is read and
// dropped for a moment (refuseLinger), and Read returns io.EOF, on which net/http
// closes the connection without a word of its own. So net/http never holds more
// than MaxHeaderFields fields, plus what one of its reads (4 KiB) carries, of a
// request.
//
// Once the head ended, Reads pass straight through until the next reset: the body
// is not scanned. The bytes a Read brings past a head's end (the socket gave more,
// and the head ended with a bare "\n\n", which pipeConn does not split on) are kept
// and handed on by the next Reads, so that a pipelined head is scanned whole. Only
// the reading goroutine and the ConnState hook touch the scan, and net/http orders
// those (the hook runs on the reading goroutine; its background read is over
// before the connection turns idle).
//
// Scanning costs a few hundred nanoseconds for a common head and allocates
// nothing; the headConn itself is one allocation per connection.
type headConn struct {
	net.Conn // the pipeConn
	limits   *headLimits
	scan     headScan
	scanning bool   // a head is being read
	held     []byte // read past a head's end, handed on first: a slice of store
	store    []byte
}

func (c *headConn) Read(p []byte) (int, error) {
	if len(c.held) > 0 {
		return c.readHeld(p)
	}
	n, err := c.Conn.Read(p)
	if !c.scanning || n == 0 {
		return n, err
	}
	end, v := c.scan.scan(p[:n])
	if v != headOK {
		return 0, c.refuse(v)
	}
	if end >= 0 {
		c.scanning = false
		if end < n { // the rest waits for the next Reads; an error comes back then
			c.store = append(c.store[:0], p[end:n]...)
			c.held = c.store
			return end, nil
		}
	}
	return n, err
}

// readHeld hands on what a Read kept past a head's end, scanning it when it is the
// next head.
func (c *headConn) readHeld(p []byte) (int, error) {
	k := min(len(p), len(c.held))
	if c.scanning {
		end, v := c.scan.scan(c.held[:k])
		if v != headOK {
			return 0, c.refuse(v)
		}
		if end >= 0 {
			c.scanning, k = false, end
		}
	}
	n := copy(p, c.held[:k])
	c.held = c.held[n:]
	return n, nil
}

// reset starts the scan of the next request's head: the connection turned idle.
func (c *headConn) reset() {
	c.scan.reset()
	c.scanning = true
}

// refuse answers the head v condemned, half-closes, drops what the client still
// sends for up to refuseLinger, and returns io.EOF for net/http, which then closes
// the connection. The refusal is counted.
func (c *headConn) refuse(v headVerdict) error {
	answer := c.limits.badFraming
	if v == headTooManyLines {
		answer = c.limits.tooMany
		c.limits.refusedFields.Add(1)
	} else {
		c.limits.refusedFraming.Add(1)
	}
	c.scanning, c.held = false, nil
	_ = c.Conn.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	if _, err := c.Conn.Write(answer); err == nil {
		_ = c.CloseWrite()
		_ = c.Conn.SetReadDeadline(time.Now().Add(refuseLinger))
		_, _ = io.CopyN(io.Discard, c.Conn, maxHeadLinger)
	}
	return io.EOF
}

// CloseWrite keeps net/http's half-close (a FIN before the close) working.
func (c *headConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps the socket's sendfile/splice path for responses served from files.
func (c *headConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
