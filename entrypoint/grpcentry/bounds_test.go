package grpcentry_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
)

// h2 is a hand-driven HTTP/2 client connection, for what no gRPC client does: it
// opens and resets streams at will, never answers a PING and ignores GOAWAY. Its
// frames are read on a goroutine of its own, which ends when the connection closes.
type h2 struct {
	conn     net.Conn
	fr       *http2.Framer
	enc      *hpack.Encoder
	buf      bytes.Buffer
	next     uint32
	settings chan struct{} // closed at the server's first SETTINGS: the server holds the connection
	acks     chan struct{} // a token per PING ack: the server read everything before the PING
	closed   chan struct{}

	mu      sync.Mutex
	goAways []http2.ErrCode
}

func dialH2(t testing.TB, conn net.Conn) *h2 {
	t.Helper()
	c := &h2{conn: conn, fr: http2.NewFramer(conn, conn), next: 1, settings: make(chan struct{}), acks: make(chan struct{}, 8), closed: make(chan struct{})}
	c.enc = hpack.NewEncoder(&c.buf)
	go func() {
		defer close(c.closed)
		var once sync.Once
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				return
			}
			if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
				once.Do(func() { close(c.settings) })
			}
			if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
				c.acks <- struct{}{}
			}
			if g, ok := f.(*http2.GoAwayFrame); ok {
				c.mu.Lock()
				c.goAways = append(c.goAways, g.ErrCode)
				c.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-c.closed })
	// Written once the reader runs: over an unbuffered net.Pipe (hosttest.Network)
	// the server's own SETTINGS must be read for it to read ours.
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// open starts an EmptyCall stream, its request still to come, and returns its id.
func (c *h2) open() (uint32, error) {
	c.buf.Reset()
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/grpc.testing.TestService/EmptyCall"}, {Name: ":authority", Value: "test"},
		{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
	} {
		_ = c.enc.WriteField(f)
	}
	id := c.next
	c.next += 2
	return id, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.buf.Bytes(), EndHeaders: true})
}

// resetN opens and resets n streams, and reports the first write that failed.
func (c *h2) resetN(n int) error {
	for range n {
		id, err := c.open()
		if err == nil {
			err = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *h2) goAway() []http2.ErrCode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.goAways)
}

func dialTCP(t *testing.T, addr net.Addr) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// Negative limits are configuration errors naming their field; zero takes the
// default (TestNewAcceptsZeroConfig).
func TestBoundsBadInput(t *testing.T) {
	_, err := grpcentry.New(grpcentry.Config{
		MaxMetadataBytes: -1, MaxConcurrentStreams: -1, MaxConnections: -1, MaxStreamResets: -1, StreamResetRate: -1,
	}, register)
	got := fields(t, err)
	for _, f := range []string{"MaxMetadataBytes", "MaxConcurrentStreams", "MaxConnections", "MaxStreamResets", "StreamResetRate"} {
		if !slices.Contains(got, f) {
			t.Errorf("no problem for %s in %v", f, err)
		}
	}
	if _, err := grpcentry.New(grpcentry.Config{MaxMetadataBytes: math.MaxUint32 + 1}, register); !slices.Contains(fields(t, err), "MaxMetadataBytes") {
		t.Errorf("MaxMetadataBytes above 2^32-1: %v", err)
	}
}

// A client that opens and resets streams past the bucket gets a GOAWAY with
// ENHANCE_YOUR_CALM and its connection closed, counted in Stats and the metrics; the
// server goes on serving, and a connection that resets within the bucket is left
// alone; the abuser's next connection is cut sooner.
func TestRapidResetIsCut(t *testing.T) {
	reg := prometheus.NewRegistry()
	x := run(t, grpcentry.Config{MaxStreamResets: 50, StreamResetRate: 1}, &service{}, grpcentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg}))

	polite := dialH2(t, dialTCP(t, x.s.Addr()))
	waitFor(t, polite.settings, "the server's SETTINGS") // its bucket is full, before any cut
	if err := polite.resetN(40); err != nil {
		t.Fatal(err)
	}
	abuser := dialH2(t, dialTCP(t, x.s.Addr()))
	for abuser.resetN(1) == nil {
	}
	waitFor(t, abuser.closed, "the abuser's connection closed")
	if got := abuser.goAway(); !slices.Contains(got, http2.ErrCodeEnhanceYourCalm) {
		t.Errorf("GOAWAYs %v, want ENHANCE_YOUR_CALM", got)
	}
	if got := x.s.Stats().ResetAbuses; got != 1 {
		t.Errorf("Stats().ResetAbuses = %d, want 1", got)
	}
	if got := testutil.ToFloat64(mustCounter(t, reg, "servicewright_grpc_reset_abuse_closed_total", nil)); got != 1 {
		t.Errorf("servicewright_grpc_reset_abuse_closed_total = %v, want 1", got)
	}
	if _, err := x.client.EmptyCall(ctxT(t), &testpb.Empty{}); err != nil {
		t.Errorf("a normal call after the abuser was cut: %v", err)
	}
	select {
	case <-polite.closed:
		t.Error("the connection that reset 40 streams was closed too")
	default:
	}

	// The abuser's host is suspected: its next connection starts with a second's
	// worth of resets (StreamResetRate, 1), not the whole bucket.
	again := dialH2(t, dialTCP(t, x.s.Addr()))
	if err := again.resetN(5); err != nil {
		t.Logf("resetting 5 streams: %v", err)
	}
	waitFor(t, again.closed, "the abuser's next connection closed")
	if got := x.s.Stats().ResetAbuses; got != 2 {
		t.Errorf("Stats().ResetAbuses = %d, want 2", got)
	}
}

// The reset guard sits under TLS as well.
func TestRapidResetIsCutOverTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	x := run(t, grpcentry.Config{CertFile: certFile, KeyFile: keyFile, MaxStreamResets: 50}, &service{})
	conn, err := tls.Dial("tcp", x.s.Addr().String(), &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	abuser := dialH2(t, conn)
	for abuser.resetN(1) == nil {
	}
	waitFor(t, abuser.closed, "the abuser's connection closed")
	if got := x.s.Stats().ResetAbuses; got != 1 {
		t.Errorf("Stats().ResetAbuses = %d, want 1", got)
	}
}

// Metadata above MaxMetadataBytes is refused, from a client that ignores the limit
// the server advertises: the connection is closed, and the server goes on serving.
func TestMetadataLimit(t *testing.T) {
	x := run(t, grpcentry.Config{MaxMetadataBytes: 64 << 10}, &service{})
	raw := dialH2(t, dialTCP(t, x.s.Addr()))
	raw.buf.Reset()
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/grpc.testing.TestService/EmptyCall"}, {Name: ":authority", Value: "test"},
		{Name: "content-type", Value: "application/grpc"}, {Name: "x-big", Value: strings.Repeat("b", 100<<10)},
	} {
		_ = raw.enc.WriteField(f)
	}
	block := raw.buf.Bytes()
	_ = raw.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:16<<10]})
	for block = block[16<<10:]; len(block) > 0; {
		n := min(16<<10, len(block))
		if raw.fr.WriteContinuation(1, n == len(block), block[:n]) != nil {
			break
		}
		block = block[n:]
	}
	waitFor(t, raw.closed, "the connection with 100 KiB of metadata closed")
	if _, err := x.client.EmptyCall(ctxT(t), &testpb.Empty{}); err != nil {
		t.Errorf("a normal call: %v", err)
	}
}

// At MaxConnections the server stops accepting: a call on a new connection waits
// until one of the open ones closes.
func TestMaxConnections(t *testing.T) {
	x := run(t, grpcentry.Config{MaxConnections: 2}, &service{})
	// The test's own client is not connected yet: grpc.NewClient dials lazily.
	a := dialH2(t, dialTCP(t, x.s.Addr()))
	_ = dialH2(t, dialTCP(t, x.s.Addr()))
	short, cancel := context.WithTimeout(ctxT(t), 300*time.Millisecond)
	defer cancel()
	if _, err := x.client.EmptyCall(short, &testpb.Empty{}); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a call at the cap: %v, want it to wait (DEADLINE_EXCEEDED)", err)
	}
	if got := x.s.Stats().ConnectionsHeld; got < 1 {
		t.Errorf("Stats().ConnectionsHeld = %d, want at least 1", got)
	}
	a.conn.Close()
	if _, err := x.client.EmptyCall(ctxT(t), &testpb.Empty{}); err != nil {
		t.Errorf("a call once a connection closed: %v", err)
	}
}

// A connection that never goes quiet — it ignores the GOAWAY, answers no PING and
// keeps a stream open whose request never comes, so that no handler runs — does not
// hold the drain: with no admitted RPC left, Drain closes it after connectionQuiet
// (1s) — exactly, in virtual time — and returns nil, and its report counts it. On
// main Drain waited for the whole budget and failed with "0 RPCs still in flight".
func TestDrainDoesNotWaitForALoudConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := runInBubble(t, grpcentry.Config{}, &service{})
		loud := dialH2(t, x.dialNetwork())
		if _, err := loud.open(); err != nil {
			t.Fatal(err)
		}
		if err := loud.fr.WritePing(false, [8]byte{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, loud.acks, "the PING ack after the stream") // the server holds the stream
		start := time.Now()
		if err := waitFor(t, x.drain(5*time.Second), "Drain"); err != nil {
			t.Fatalf("Drain = %v, want nil", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("Drain took %s of virtual time, want connectionQuiet (1s)", d)
		}
		waitFor(t, loud.closed, "the loud connection closed")
		if r := x.s.DrainReport(); !strings.Contains(r, "connections_cut=1") {
			t.Errorf("DrainReport() = %q, want connections_cut=1", r)
		}
	})
}
