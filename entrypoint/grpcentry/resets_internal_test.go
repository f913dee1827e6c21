package grpcentry

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/net/http2"
)

// The scanner finds every RST_STREAM and the highest stream opened however the bytes
// are cut into reads, and knows when they end with a whole frame.
func TestFrameScanner(t *testing.T) {
	var b bytes.Buffer
	_, _ = io.WriteString(&b, http2.ClientPreface)
	fr := http2.NewFramer(&b, nil)
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x83, 0x86}, EndHeaders: true})
	_ = fr.WriteData(1, false, bytes.Repeat([]byte{frameRSTStream}, 300)) // bytes that look like frame types
	_ = fr.WriteRSTStream(1, http2.ErrCodeCancel)
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 7, BlockFragment: []byte{0x83}, EndHeaders: true})
	_ = fr.WriteRSTStream(7, http2.ErrCodeCancel)
	_ = fr.WritePing(false, [8]byte{})
	stream := b.Bytes()
	for size := 1; size <= len(stream); size++ {
		s := frameScanner{skip: clientPrefaceLen}
		resets, opened := 0, uint32(0)
		for rest := stream; len(rest) > 0; {
			n := min(size, len(rest))
			end, r, o := s.scan(rest[:n], 100)
			if end != -1 {
				t.Fatalf("reads of %d: stopped at %d within the budget", size, end)
			}
			resets, opened, rest = resets+r, max(opened, o), rest[n:]
			if len(rest) > 0 && len(rest) < 17 && s.boundary() { // inside the PING
				t.Fatalf("reads of %d: a boundary %d bytes before the end", size, len(rest))
			}
		}
		if resets != 2 || opened != 7 || !s.boundary() {
			t.Fatalf("reads of %d: resets %d, opened %d, boundary %v; want 2, 7, true", size, resets, opened, s.boundary())
		}
	}
}

// The bucket holds MaxStreamResets resets and refills at StreamResetRate a second,
// up to MaxStreamResets.
func TestResetBucket(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := &guardedConn{g: &resetGuard{burst: 10, rate: 2}, tokens: 10, last: t0}
	if !c.take(10, t0) {
		t.Fatal("the burst was refused")
	}
	if c.take(1, t0) {
		t.Fatal("a reset past the burst was allowed")
	}
	c = &guardedConn{g: &resetGuard{burst: 10, rate: 2}, tokens: 10, last: t0}
	c.take(10, t0)
	if !c.take(2, t0.Add(time.Second)) {
		t.Fatal("a second's refill (2) was refused")
	}
	if c.take(1, t0.Add(time.Second)) {
		t.Fatal("more than a second's refill was allowed")
	}
	if !c.take(10, t0.Add(time.Hour)) || c.take(1, t0.Add(time.Hour)) {
		t.Fatal("the refill was not capped at the burst")
	}
}

// With a budget, the scanner stops where the first RST_STREAM past it begins.
func TestFrameScannerStopsPastBudget(t *testing.T) {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	var starts []int
	for id := uint32(1); id < 10; id += 2 {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte{0x83}, EndHeaders: true})
		starts = append(starts, b.Len())
		_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	for budget := range 5 {
		var s frameScanner
		end, resets, opened := s.scan(b.Bytes(), budget)
		if end != starts[budget] || resets != budget || opened != uint32(2*budget+1) {
			t.Errorf("budget %d: end %d, resets %d, opened %d; want %d, %d, %d", budget, end, resets, opened, starts[budget], budget, 2*budget+1)
		}
	}
	// The RST_STREAM past the budget began in an earlier read.
	var s frameScanner
	s.scan(b.Bytes()[:starts[0]+4], 0)
	if end, _, _ := s.scan(b.Bytes()[starts[0]+4:], 0); end != 0 {
		t.Errorf("a frame begun in the previous read: end %d, want 0", end)
	}
}

// scripted is a connection whose reads return the chunks the test queued, one a
// Read; its writes and close only count, for the GOAWAY and close of a cut.
type scripted struct {
	reads  [][]byte
	closed bool
}

func (c *scripted) Read(p []byte) (int, error) {
	if len(c.reads) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.reads[0])
	c.reads = c.reads[1:]
	return n, nil
}
func (c *scripted) Write(p []byte) (int, error)      { return len(p), nil }
func (c *scripted) Close() error                     { c.closed = true; return nil }
func (c *scripted) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *scripted) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *scripted) SetDeadline(time.Time) error      { return nil }
func (c *scripted) SetReadDeadline(time.Time) error  { return nil }
func (c *scripted) SetWriteDeadline(time.Time) error { return nil }

// Read takes the clock only while the bucket is not full; a bucket that stayed full
// for an hour refills from the read that first takes from it, not from the hour
// before.
func TestResetBucketRead(t *testing.T) {
	resets := func(n int) []byte {
		var b bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		for i := range n {
			_ = fr.WriteRSTStream(uint32(2*i+1), http2.ErrCodeCancel)
		}
		return b.Bytes()
	}
	synctest.Test(t, func(t *testing.T) {
		g := &resetGuard{burst: 10, rate: 2, onAbuse: func(net.Addr) {}}
		guard := func(reads ...[]byte) *guardedConn {
			c := g.wrap(&scripted{reads: reads}).(*guardedConn)
			c.in.skip = 0 // no client preface in these reads
			return c
		}
		buf := make([]byte, 4096)

		c := guard(resets(10), resets(1))
		time.Sleep(time.Hour) // full all along: nothing to refill
		if _, err := c.Read(buf); err != nil || c.cut.Load() {
			t.Fatalf("the burst: %v", err)
		}
		if _, err := c.Read(buf); !errors.Is(err, errResetAbuse) || !c.cut.Load() {
			t.Fatalf("a reset past the burst, an hour after the connection: %v, want the cut", err)
		}

		c = guard(resets(10), resets(2), resets(1))
		time.Sleep(time.Hour)
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if _, err := c.Read(buf); err != nil || c.cut.Load() {
			t.Fatalf("a second's refill (2): %v", err)
		}
		if _, err := c.Read(buf); !errors.Is(err, errResetAbuse) {
			t.Fatalf("a reset past a second's refill: %v, want the cut", err)
		}
	})
}
