package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/metadata"

	ordersv1 "github.com/servicewright/servicewright/cmd/example/api/orders/v1"
	"github.com/servicewright/servicewright/internal/proctest"
)

// rawConn is a hand-driven HTTP/2 client connection to the gRPC port, for what no
// well-behaved client does. Its frames are read on a goroutine of its own, which
// records the GOAWAYs and PING acks, and ends when the server closes the connection.
type rawConn struct {
	conn   net.Conn
	fr     *http2.Framer
	wmu    sync.Mutex // serialises the writes: the reader answers the server's PINGs
	enc    *hpack.Encoder
	hbuf   bytes.Buffer
	next   uint32 // the next stream id
	closed chan struct{}

	mu      sync.Mutex
	goAways []http2.ErrCode
	acks    chan struct{} // a token per PING ack
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := tryDialRaw(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.conn.Close(); <-c.closed })
	return c
}

func (c *rawConn) read() {
	defer close(c.closed)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.conn.Close()
			return
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			c.mu.Lock()
			c.goAways = append(c.goAways, f.ErrCode)
			c.mu.Unlock()
		case *http2.PingFrame:
			if f.IsAck() {
				c.acks <- struct{}{}
			} else {
				c.wmu.Lock()
				_ = c.fr.WritePing(true, f.Data)
				c.wmu.Unlock()
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.wmu.Lock()
				_ = c.fr.WriteSettingsAck()
				c.wmu.Unlock()
			}
		}
	}
}

// headers opens a stream to method with the extra metadata fields, in a HEADERS
// frame and as many CONTINUATION frames as it takes, and returns its id.
func (c *rawConn) headers(method string, extra ...hpack.HeaderField) (uint32, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.hbuf.Reset()
	for _, f := range append([]hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: method}, {Name: ":authority", Value: "orders"},
		{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
	}, extra...) {
		_ = c.enc.WriteField(f)
	}
	id := c.next
	c.next += 2
	block := c.hbuf.Bytes()
	const frag = 16 << 10
	first := block[:min(frag, len(block))]
	block = block[len(first):]
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(block) == 0}); err != nil {
		return 0, err
	}
	for len(block) > 0 {
		chunk := block[:min(frag, len(block))]
		block = block[len(chunk):]
		if err := c.fr.WriteContinuation(id, len(block) == 0, chunk); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// reset cancels stream id.
func (c *rawConn) reset(id uint32) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
}

// ping sends a PING; its ack, once the server read everything before it, is a token on
// c.acks.
func (c *rawConn) ping() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.fr.WritePing(false, [8]byte{'s', 'w'})
}

func (c *rawConn) calmedDown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.goAways, http2.ErrCodeEnhanceYourCalm)
}

// flood opens and resets streams on c until the server closes it, and reports
// whether it did.
func (c *rawConn) flood(ctx context.Context) {
	for ctx.Err() == nil {
		id, err := c.headers("/orders.v1.OrdersService/GetOrder")
		if err == nil {
			err = c.reset(id)
		}
		if err != nil {
			return
		}
	}
}

// memory returns the resident set size of process pid and its peak, in bytes.
func memory(t *testing.T, pid int) (rss, peak int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}

// grpcMetric returns the value of the example's sample name{entrypoint="grpc"}, or
// -1 when /metrics has no such sample.
func grpcMetric(t *testing.T, probe, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + probe + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, `entrypoint="grpc"`) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	return -1
}

// latency times n GetOrder calls one after another and returns the median and the
// 99th percentile.
func latency(ctx context.Context, api ordersv1.OrdersServiceClient, n int) (p50, p99 time.Duration, err error) {
	took := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		_, err := api.GetOrder(ctx, &ordersv1.GetOrderRequest{Id: "g0"})
		if err != nil && ctx.Err() != nil {
			return 0, 0, err
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took[n/2], took[n*99/100], nil
}

// An RPC's metadata is bounded near the HTTP headers: a call with 2 MiB of metadata
// is refused and one with 512 KiB is served, and 12 calls with 15 MiB of metadata each
// from a client that ignores the advertised limit do not swell the process (on main:
// 16 MiB accepted, and the peak RSS grew by hundreds of MB).
func TestGRPCMetadataBounded(t *testing.T) {
	addr := freeAddr(t)
	p, _ := startExample(t, "GRPC_ADDR="+addr, "SW_DRAIN_DELAY=100ms")
	mustLog(t, p, stage("serve"), 20*time.Second)
	api := ordersv1.NewOrdersServiceClient(dialGRPC(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	call := func(size int) error {
		md := metadata.Pairs()
		for i := 0; size > 0; i++ {
			n := min(size, 32<<10)
			md.Append(fmt.Sprintf("x-pad-%d", i), strings.Repeat("m", n))
			size -= n
		}
		_, err := api.GetOrder(metadata.NewOutgoingContext(ctx, md), &ordersv1.GetOrderRequest{Id: "g0"})
		return err
	}
	if err := call(512 << 10); err != nil && !strings.Contains(err.Error(), "no order") {
		t.Fatalf("a call with 512 KiB of metadata: %v, want it served", err)
	}
	if err := call(2 << 20); err == nil || strings.Contains(err.Error(), "no order") {
		t.Fatalf("a call with 2 MiB of metadata: %v, want it refused", err)
	} else {
		t.Logf("a call with 2 MiB of metadata: %v", err)
	}

	// A raw client sends calls of 15 MiB of metadata each (480 fields of 32 KiB),
	// each on a connection of its own, leaving the streams open, and a PING after
	// each: its ack means the server read the call, the connection's close that it
	// refused it.
	rss0, peak0 := memory(t, p.Pid())
	var big []hpack.HeaderField
	for i := range 480 {
		big = append(big, hpack.HeaderField{Name: fmt.Sprintf("x-pad-%d", i), Value: strings.Repeat(string(rune('a'+i%26)), 32<<10)})
	}
	// 12 calls, 180 MiB: a server that kept even a third of each call would grow its
	// peak RSS past the 64 MiB bound below (it grows by some 5 MiB). With -race and
	// other packages' tests on the same two cores a call takes seconds rather than
	// milliseconds, so each has a sanity bound of its own, a minute.
	const calls = 12
	refused := 0
	for i := range calls {
		raw := dialRaw(t, addr)
		if _, err := raw.headers("/orders.v1.OrdersService/GetOrder", big...); err == nil {
			_ = raw.ping()
		}
		select {
		case <-raw.acks:
		case <-raw.closed:
			refused++
		case <-time.After(time.Minute):
			t.Fatalf("call %d: the server neither acked the PING nor closed the connection in a minute", i+1)
		}
	}
	rss1, peak1 := memory(t, p.Pid())
	t.Logf("RSS %d MiB → %d MiB, peak %d MiB → %d MiB, after %d calls of 15 MiB of metadata, %d of them refused",
		rss0>>20, rss1>>20, peak0>>20, peak1>>20, calls, refused)
	if refused != calls {
		t.Errorf("%d of the %d calls with 15 MiB of metadata were refused, want all", refused, calls)
	}
	if grew := peak1 - peak0; grew > 64<<20 {
		t.Errorf("peak RSS grew by %d MiB, want the 1 MiB limit to keep it small", grew>>20)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second) // call's ctx, anew
	defer cancel()
	if err := call(1 << 10); err != nil && !strings.Contains(err.Error(), "no order") {
		t.Errorf("a normal call after the big ones: %v", err)
	}
	_ = p.Signal(syscall.SIGTERM)
	if code := exitCode(t, p); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// An HTTP/2 rapid-reset flood (HEADERS then RST_STREAM in a loop, on 2 connections,
// each reconnecting when cut) gets each connection a GOAWAY ENHANCE_YOUR_CALM and
// closed, counted in servicewright_grpc_reset_abuse_closed_total; normal calls go on
// (their p50 before and during the flood is logged); and SIGTERM with the abuser
// connected exits 0 within the drain budget. On main the connections are never cut,
// nothing is counted, and the exit is 1 after the whole grace.
func TestGRPCRapidReset(t *testing.T) {
	addr := freeAddr(t)
	p, probe := startExample(t, "GRPC_ADDR="+addr, "SW_DRAIN_DELAY=100ms")
	mustLog(t, p, stage("serve"), 20*time.Second)
	api := ordersv1.NewOrdersServiceClient(dialGRPC(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	before, before99, err := latency(ctx, api, 200)
	if err != nil {
		t.Fatal(err)
	}

	// The flood: 2 attackers, each on one connection at a time, reconnecting when cut.
	flood, stopFlood := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var conns, calmed atomic.Int64
	live := make(chan *rawConn, 2) // the attackers' first connections
	for range 2 {
		wg.Go(func() {
			first := true
			for flood.Err() == nil {
				c, err := tryDialRaw(addr)
				if err != nil {
					return // the listener is closed
				}
				conns.Add(1)
				if first {
					live <- c
					first = false
				}
				c.flood(flood)
				if flood.Err() == nil {
					<-c.closed
				}
				if c.calmedDown() {
					calmed.Add(1)
				}
				c.conn.Close()
				<-c.closed
			}
		})
	}
	defer func() { stopFlood(); wg.Wait() }()
	for range 2 {
		c := <-live
		select {
		case <-c.closed:
		case <-ctx.Done():
			t.Fatal("an attacker's connection was never closed")
		}
	}
	if calmed.Load() == 0 {
		t.Error("no attacker connection got a GOAWAY with ENHANCE_YOUR_CALM")
	}
	cut := grpcMetric(t, probe, "servicewright_grpc_reset_abuse_closed_total")
	if cut < 2 {
		t.Errorf("servicewright_grpc_reset_abuse_closed_total = %v, want at least the 2 first connections", cut)
	}
	stopFlood()
	wg.Wait()

	// The figures, with the flood from a process of its own (internal/cmd/rapidreset,
	// 2 connections, reconnecting when cut), so that the attacker does not share the
	// measuring client's process.
	attacker := exec.Command(rapidresetBin(t), "-addr", addr, "-conns", "2")
	if err := attacker.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = attacker.Process.Kill(); _ = attacker.Wait() }()
	during, during99, err := latency(ctx, api, 200)
	if err != nil {
		t.Fatal(err)
	}
	cutDuring := grpcMetric(t, probe, "servicewright_grpc_reset_abuse_closed_total") - cut
	t.Logf("GetOrder p50 %s before the flood, %s during it (%.1fx); p99 %s before, %s during; %.0f attacker connections cut during the measurement (before it, the test's own attackers opened %d connections, %d of them sent GOAWAY ENHANCE_YOUR_CALM)",
		before, during, float64(during)/float64(before), before99, during99, cutDuring, conns.Load(), calmed.Load())
	if cutDuring < 1 {
		t.Errorf("no attacker connection was cut while the latency was measured: was there a flood?")
	}

	// SIGTERM with the attacker still at it.
	start := time.Now()
	_ = p.Signal(syscall.SIGTERM)
	code := exitCode(t, p)
	took := time.Since(start)
	budget := 3 * exampleDrainGrace // a sanity bound: an attacker holding the drain holds it until killed
	t.Logf("exit %d %s after SIGTERM (budget %s)", code, took, budget)
	if code != 0 {
		t.Errorf("exit %d with the attacker connected, want 0", code)
	}
	if took > budget {
		t.Errorf("exited %s after SIGTERM, past the %s budget", took, budget)
	}
	if line := p.Find(map[string]string{"msg": "grpc connection sent GOAWAY and closed: too many stream resets"}); line == nil {
		t.Error("no log line for the connections cut")
	}
}

// tryDialRaw is dialRaw for a goroutine: it returns the error instead of failing the
// test, and the caller closes the connection.
func tryDialRaw(addr string) (*rawConn, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	c := &rawConn{conn: conn, next: 1, closed: make(chan struct{}), acks: make(chan struct{}, 16)}
	c.fr = http2.NewFramer(conn, conn)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(1<<20, nil)
	c.enc = hpack.NewEncoder(&c.hbuf)
	if _, err = io.WriteString(conn, http2.ClientPreface); err == nil {
		err = c.fr.WriteSettings()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	go c.read()
	return c, nil
}

// rapidresetBin builds internal/cmd/rapidreset for the test.
func rapidresetBin(t *testing.T) string {
	t.Helper()
	bin, err := proctest.Build(t.TempDir(), "github.com/servicewright/servicewright/internal/cmd/rapidreset")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
