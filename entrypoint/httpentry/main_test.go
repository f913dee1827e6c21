package httpentry

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/host/hosttest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// failAfter bounds every wait in these tests. It is a failure timeout, never a
// stand-in for synchronisation.
const failAfter = 10 * time.Second

// running is a Server driven as the Host drives it: bound, serving in the
// background, then stopped and drained by the test.
type running struct {
	t       *testing.T
	s       *Server
	base    string // http://127.0.0.1:port
	stop    chan struct{}
	once    sync.Once
	served  chan error
	tr      *http.Transport
	client  *http.Client
	network *hosttest.Network // set by runInBubble: dial reaches the Server through it
}

// run makes, binds and serves a Server on a loopback port. Cleanup stops it and
// closes the client's idle connections.
func run(t *testing.T, cfg Config, h http.Handler, opts ...Option) *running {
	t.Helper()
	return runWith(t, cfg, h, nil, opts...)
}

// runWith is run with prep called between New and Bind, as the Host calls
// SetDefaults.
func runWith(t *testing.T, cfg Config, h http.Handler, prep func(*Server), opts ...Option) *running {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := New(cfg, h, opts...)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	if prep != nil {
		prep(s)
	}
	if err := s.Bind(context.Background()); err != nil {
		t.Fatalf("Bind = %v", err)
	}
	return serveAndClean(t, s, "http://"+s.Addr().String(), &http.Transport{MaxIdleConnsPerHost: 100}, nil)
}

// serveAndClean serves s in the background for a client on tr; Cleanup stops it and
// closes the client's idle connections. A nil network means the client dials TCP.
func serveAndClean(t *testing.T, s *Server, base string, tr *http.Transport, network *hosttest.Network) *running {
	t.Helper()
	x := &running{
		t: t, s: s, base: base,
		stop: make(chan struct{}), served: make(chan error, 1),
		tr: tr, client: &http.Client{Transport: tr}, network: network,
	}
	go func() { x.served <- s.Serve(context.Background(), x.stop) }()
	t.Cleanup(func() {
		x.endServe()
		ctx, cancel := context.WithTimeout(context.Background(), failAfter)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop = %v", err)
		}
		tr.CloseIdleConnections()
	})
	return x
}

// endServe closes stop, as the Host does when shutdown begins, and checks that Serve
// returned nil.
func (x *running) endServe() {
	x.t.Helper()
	first := false
	x.once.Do(func() { close(x.stop); first = true })
	if !first {
		return
	}
	select {
	case err := <-x.served:
		if err != nil {
			x.t.Errorf("Serve = %v, want nil", err)
		}
	case <-time.After(failAfter):
		x.t.Fatal("Serve did not return after stop closed")
	}
}

// drain runs Drain with a deadline of grace.
func (x *running) drain(grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return x.s.Drain(ctx)
}

// get does a GET and returns the status and body.
func (x *running) get(path string) (int, string, error) {
	resp, err := x.client.Get(x.base + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// mustGet does a GET that must answer want.
func (x *running) mustGet(path string, want int) string {
	x.t.Helper()
	code, body, err := x.get(path)
	if err != nil || code != want {
		x.t.Fatalf("GET %s = %d %q, %v; want %d", path, code, body, err, want)
	}
	return body
}

// rawConn is a client connection that speaks HTTP/1.1 by hand, so a test knows
// which connection each request travels on.
type rawConn struct {
	t *testing.T
	net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr net.Addr) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), failAfter)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return newRaw(t, c)
}

// dial opens a raw connection to x's Server, over its in-memory network when it
// has one.
func (x *running) dial() *rawConn {
	x.t.Helper()
	if x.network == nil {
		return dialRaw(x.t, x.s.Addr())
	}
	c, err := x.network.Dial()
	if err != nil {
		x.t.Fatalf("dial: %v", err)
	}
	return newRaw(x.t, c)
}

func newRaw(t *testing.T, c net.Conn) *rawConn {
	c.SetDeadline(time.Now().Add(failAfter))
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, Conn: c, br: bufio.NewReader(c)}
}

// do sends a request with the extra header lines and body, and reads the whole
// response. The response's Body is already drained; its text is returned.
func (c *rawConn) do(method, path, body string, headers ...string) (*http.Response, string) {
	c.t.Helper()
	if body != "" {
		headers = append(headers, fmt.Sprintf("Content-Length: %d\r\n", len(body)))
	}
	req := method + " " + path + " HTTP/1.1\r\nHost: test\r\n" + strings.Join(headers, "") + "\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		c.t.Fatalf("write request: %v", err)
	}
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("read response to %s %s: %v", method, path, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read body of %s %s: %v", method, path, err)
	}
	resp.Body.Close()
	return resp, string(b)
}

// readToEOF reads what is left and reports the error that ended it (nil for EOF).
func (c *rawConn) readToEOF() (string, error) {
	b, err := io.ReadAll(c.br)
	return string(b), err
}

// recv waits for a value from ch, failing the test after failAfter.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failAfter):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// holdHandler blocks each request to /hold until release is closed, after telling
// entered; /ok answers at once.
type holdHandler struct {
	entered chan struct{}
	release chan struct{}
}

func newHold() *holdHandler {
	return &holdHandler{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (h *holdHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/hold":
		h.entered <- struct{}{}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "held")
	default:
		io.WriteString(w, "ok")
	}
}
