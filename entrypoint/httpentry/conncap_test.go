package httpentry

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMaxConns: at MaxConns the server stops accepting; a connection beyond it waits
// in the backlog and is served once an open one closes; at Drain the connections
// still waiting are answered 503 draining, and the drain report says what the cap
// held back.
func TestMaxConns(t *testing.T) {
	x := run(t, Config{MaxConns: 2}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	a, b := dialRaw(t, x.s.Addr()), dialRaw(t, x.s.Addr())
	for _, c := range []*rawConn{a, b} {
		if resp, body := c.do("GET", "/", ""); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("GET = %d %q", resp.StatusCode, body)
		}
	}
	// Both stay open, idle: a third connection waits in the backlog.
	third := dialRaw(t, x.s.Addr())
	answered := make(chan string, 1)
	go func() {
		_, _ = io.WriteString(third, "GET / HTTP/1.1\r\nHost: test\r\n\r\n")
		resp, err := http.ReadResponse(third.br, &http.Request{Method: "GET"})
		if err != nil {
			answered <- err.Error()
			return
		}
		resp.Body.Close()
		answered <- fmt.Sprint(resp.StatusCode)
	}()
	waiting := dialRaw(t, x.s.Addr()) // a fourth, still waiting at Drain
	_, _ = io.WriteString(waiting, "GET / HTTP/1.1\r\nHost: test\r\n\r\n")

	a.Close()
	if got := recv(t, answered, "the third connection's answer"); got != "200" {
		t.Fatalf("third connection = %s, want 200 once one closed", got)
	}
	if st := x.s.capped.Stats(); st.Peak != 2 || st.Paused == 0 {
		t.Errorf("cap stats %+v, want a peak of 2 and the accept loop paused", st)
	}

	x.endServe()
	if err := x.drain(5 * time.Second); err != nil {
		t.Fatalf("Drain = %v", err)
	}
	resp, err := http.ReadResponse(waiting.br, &http.Request{Method: "GET"})
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the connection waiting at Drain = %v %v, want 503 draining", resp, err)
	}
	resp.Body.Close()
	rep := x.s.DrainReport()
	if !strings.Contains(rep, "conns_max=2 conns_peak=2 accept_paused=") || !strings.Contains(rep, "paused_for=") {
		t.Errorf("DrainReport() = %q, want what the cap held back", rep)
	}
}
