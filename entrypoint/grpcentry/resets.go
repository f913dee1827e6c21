package grpcentry

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
)

// errResetAbuse is what the grpc.Server reads from a connection cut for resetting
// too many streams.
var errResetAbuse = errors.New("grpcentry: connection closed: too many stream resets")

// The HTTP/2 frames the reset guard reads or writes (RFC 9113 §6).
const (
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	frameGoAway    = 0x7

	errCodeEnhanceYourCalm = 0xb
	clientPrefaceLen       = 24 // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

// goAwayDebug is the debug data of the GOAWAY sent to a connection cut for resets.
const goAwayDebug = "too many stream resets"

// resetGuard is the transport credentials the grpc.Server is built with: those of
// the Config (TLS) or none (plaintext), and around every connection they hand over
// a guardedConn that counts the streams the client resets. It exists because
// grpc-go bounds the handlers a connection runs at once (MaxConcurrentStreams) but
// neither closes nor counts a connection that opens and resets streams without end.
type resetGuard struct {
	inner       credentials.TransportCredentials // nil: plaintext
	burst, rate float64
	onAbuse     func(remote net.Addr)
	suspects    suspects
	leaving     leaving // the connections to send a GOAWAY once readiness is withdrawn (leave.go)
}

func (g *resetGuard) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if g.inner == nil {
		return g.wrap(raw), nil, nil
	}
	conn, auth, err := g.inner.ServerHandshake(raw)
	if err != nil {
		return nil, nil, err
	}
	return g.wrap(conn), auth, nil
}

// wrap guards c. A connection from a host that had one cut in the last
// suspectFor starts with a second's worth of resets (StreamResetRate) rather than the
// whole bucket, so that an attacker who reconnects costs the server a few streams a
// connection instead of MaxStreamResets.
func (g *resetGuard) wrap(c net.Conn) net.Conn {
	now := time.Now()
	gc := &guardedConn{Conn: c, g: g, tokens: g.burst, last: now}
	if g.suspects.has(host(c.RemoteAddr()), now) {
		gc.tokens = min(g.rate, g.burst)
	}
	gc.in.skip = clientPrefaceLen
	g.leaving.add(gc)
	return gc
}

func (g *resetGuard) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("grpcentry: server credentials used by a client")
}

func (g *resetGuard) Info() credentials.ProtocolInfo {
	if g.inner == nil {
		return credentials.ProtocolInfo{}
	}
	return g.inner.Info()
}

// Clone returns a guard with the same limits; the hosts suspected are not copied.
func (g *resetGuard) Clone() credentials.TransportCredentials {
	c := &resetGuard{inner: g.inner, burst: g.burst, rate: g.rate, onAbuse: g.onAbuse}
	if g.inner != nil {
		c.inner = g.inner.Clone()
	}
	return c
}

// OverrideServerName is a client's concern; the guard ignores it.
func (g *resetGuard) OverrideServerName(string) error { return nil }

// guardedConn is a server connection whose reads are scanned for HTTP/2 frame
// headers. Every RST_STREAM the client sends takes a token from a bucket of
// resetGuard.burst refilled at resetGuard.rate a second; a reset that finds the
// bucket empty gets the connection a GOAWAY (ENHANCE_YOUR_CALM, naming the last
// stream the client opened) and closes it. The GOAWAY is written between two of the
// server's own frames: the writes are scanned too, and when the server is in the
// middle of a frame the connection is closed without it.
type guardedConn struct {
	net.Conn
	g *resetGuard

	// Read's, on the grpc.Server's reading goroutine alone.
	in     frameScanner
	tokens float64
	last   time.Time

	lastStream atomic.Uint32 // the highest stream the client opened
	cut        atomic.Bool   // set once the client reset too many streams

	mu    sync.Mutex   // serialises the server's writes and the GOAWAY
	out   frameScanner // the server's frames, for the GOAWAY's place
	wrote bool         // the server has written its first frame (its SETTINGS)
	leave atomic.Int32 // leaveNone, leaveDue or leaveWritten (leave.go)
	set   *leaving     // where the connection is listed until it closes
}

// Read reads from the connection and scans what it read. When a reset finds the
// bucket empty, it cuts the connection and returns only the bytes before that
// RST_STREAM frame, so that the grpc.Server does not go on to open the streams
// that came after it in the same read. The clock is read only while the bucket is
// not full, and when a read takes from a full one (it refills from then on): a
// connection that resets nothing costs no clock read, which is a large part of
// this wrapper's cost on a virtual machine's clock.
func (c *guardedConn) Read(p []byte) (int, error) {
	if c.cut.Load() {
		return 0, errResetAbuse
	}
	n, err := c.Conn.Read(p)
	if n == 0 {
		return n, err
	}
	full := c.tokens >= c.g.burst
	if !full {
		c.refill(time.Now())
	}
	end, resets, opened := c.in.scan(p[:n], max(int(c.tokens), 0))
	if resets > 0 {
		if full {
			c.last = time.Now()
		}
		c.tokens -= float64(resets)
	}
	if opened > c.lastStream.Load() {
		c.lastStream.Store(opened)
	}
	if end < 0 {
		return n, err
	}
	c.abuse()
	if end == 0 {
		return 0, errResetAbuse
	}
	return end, nil
}

// refill adds the tokens earned since the last refill, up to the burst.
func (c *guardedConn) refill(now time.Time) {
	c.tokens = min(c.g.burst, c.tokens+now.Sub(c.last).Seconds()*c.g.rate)
	c.last = now
}

// take refills the bucket and spends n tokens; it reports false when there were
// fewer than n.
func (c *guardedConn) take(n int, now time.Time) bool {
	c.refill(now)
	c.tokens -= float64(n)
	return c.tokens >= 0
}

// abuse cuts the connection, once: a GOAWAY if the server is between frames, then
// the close, which ends the grpc.Server's reading and writing on it.
func (c *guardedConn) abuse() {
	if c.cut.Swap(true) {
		return
	}
	c.g.suspects.add(host(c.RemoteAddr()), time.Now())
	c.g.onAbuse(c.RemoteAddr())
	if c.mu.TryLock() {
		if c.out.boundary() {
			var f [9 + 8 + len(goAwayDebug)]byte
			binary.BigEndian.PutUint32(f[0:4], uint32(len(f)-9)<<8|frameGoAway)
			binary.BigEndian.PutUint32(f[9:13], c.lastStream.Load())
			binary.BigEndian.PutUint32(f[13:17], errCodeEnhanceYourCalm)
			copy(f[17:], goAwayDebug)
			_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Conn.Write(f[:])
		}
		c.mu.Unlock()
	}
	_ = c.Conn.Close()
}

func (c *guardedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	n, err := c.Conn.Write(p)
	c.out.scan(p[:n], math.MaxInt)
	c.wrote = c.wrote || n > 0
	c.writeLeaving()
	c.mu.Unlock()
	if c.leave.Load() == leaveDue { // made due while this write held the lock
		c.tryLeave()
	}
	return n, err
}

// Close closes the connection and stops listing it for the move-off.
func (c *guardedConn) Close() error {
	if c.set != nil {
		c.set.remove(c)
	}
	return c.Conn.Close()
}

// frameScanner follows the frame headers of one direction of an HTTP/2 connection
// without copying the payloads. The zero frameScanner expects a frame; set skip to
// pass over the client preface first.
type frameScanner struct {
	skip int     // bytes of the current payload (or the preface) still to pass
	hdr  [9]byte // the frame header being read
	n    int     // bytes of hdr read
}

// scan passes over b and returns how many RST_STREAM frames began in it and the
// highest stream a HEADERS frame in it opened (0 if none). It stops at the RST_STREAM
// frame past budget and returns the offset in b where that frame begins (0 when it
// began in an earlier b); end is -1 when it scanned the whole of b.
func (s *frameScanner) scan(b []byte, budget int) (end, resets int, opened uint32) {
	for i := 0; i < len(b); {
		if s.skip > 0 {
			k := min(s.skip, len(b)-i)
			s.skip -= k
			i += k
			continue
		}
		start := i - s.n // where the frame header began
		var h []byte
		if s.n == 0 && len(b)-i >= len(s.hdr) {
			h = b[i : i+len(s.hdr)] // the whole header is in b: read it in place
			i += len(s.hdr)
		} else {
			k := copy(s.hdr[s.n:], b[i:])
			s.n += k
			i += k
			if s.n < len(s.hdr) {
				break
			}
			s.n = 0
			h = s.hdr[:]
		}
		s.skip = int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		switch h[3] {
		case frameRSTStream:
			if resets == budget {
				return max(start, 0), resets, opened
			}
			resets++
		case frameHeaders:
			opened = max(opened, binary.BigEndian.Uint32(h[5:9])&(1<<31-1))
		}
	}
	return -1, resets, opened
}

// boundary tells whether the bytes scanned end with a whole frame.
func (s *frameScanner) boundary() bool { return s.skip == 0 && s.n == 0 }

// suspectFor is how long a host whose connection was cut for resets is suspected, and
// maxSuspects how many hosts are remembered at most (past it, new ones are not).
const (
	suspectFor  = time.Minute
	maxSuspects = 4096
)

// suspects are the hosts that had a connection cut for resets, each until its
// suspicion expires. The zero value is empty and ready to use.
type suspects struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (s *suspects) add(h string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.until == nil {
		s.until = make(map[string]time.Time)
	}
	if len(s.until) >= maxSuspects {
		for k, t := range s.until {
			if !now.Before(t) {
				delete(s.until, k)
			}
		}
		if len(s.until) >= maxSuspects {
			return
		}
	}
	s.until[h] = now.Add(suspectFor)
}

func (s *suspects) has(h string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.until[h]
	return ok && now.Before(t)
}

// host is addr's IP, or the whole address when it has no port.
func host(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	h, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return h
}
