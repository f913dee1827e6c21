package host

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestProbeConnsEvict: at the cap, a new connection takes the place of the oldest one
// with nothing waiting to be read, sparing an older one whose request is waiting; a
// connection whose request is being answered is never evicted, and a newcomer finding
// every connection busy is closed.
func TestProbeConnsEvict(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc := newProbeConns(2)
	capped := pc.listener(ln)
	defer capped.Close()
	accept := func() net.Conn {
		t.Helper()
		c, err := capped.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dial := func(send string) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if send != "" {
			if _, err := io.WriteString(c, send); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	// closed reports whether the server closed c: a read sees EOF at once.
	closed := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}

	// On loopback a write is in the peer's receive queue when it returns: the request
	// is waiting before Accept.
	waiting := dial("GET /livez HTTP/1.1\r\n")
	if !accept().(*probeConn).eager {
		t.Fatal("a connection whose request was waiting at accept is not marked so")
	}
	idle := dial("")
	accept()
	dial("")
	accept()
	if !closed(idle) || closed(waiting) {
		t.Errorf("at the cap: the idle connection closed %v, the waiting one %v; want only the idle one", closed(idle), closed(waiting))
	}
	// Every connection busy: the newcomer is closed, none evicted.
	for e := pc.order.Front(); e != nil; e = e.Next() {
		pc.state(e.Value.(*probeConn), http.StateActive)
	}
	late := dial("")
	go func() { _, _ = capped.Accept() }() // takes late and closes it, then waits
	if !closed(late) {
		t.Error("a newcomer with every connection busy was not closed")
	}
	if pc.refused.Load() != 1 || pc.evicted.Load() != 1 || pc.open() != 2 {
		t.Errorf("refused %d, evicted %d, open %d; want 1, 1, 2", pc.refused.Load(), pc.evicted.Load(), pc.open())
	}
}
