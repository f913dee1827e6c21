package httpentry

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// acceptHold stops the Server's accept loop while held, so that the connections
// dialled meanwhile wait in the listening socket's backlog, completed by the kernel
// but not accepted. The accept loop runs the ConnState hook of each connection it
// accepts; install makes that hook wait while held. At most one connection, the
// first, is accepted (and waits in the hook) before the loop stops.
type acceptHold struct {
	held    atomic.Bool
	release chan struct{}
}

func newAcceptHold() *acceptHold { return &acceptHold{release: make(chan struct{})} }

// install wraps the Server's ConnState hook; runWith calls it before Serve.
func (h *acceptHold) install(s *Server) {
	track := s.srv.ConnState
	s.srv.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew && h.held.Load() {
			<-h.release
		}
		track(c, st)
	}
}

// hold stops the accept loop until the returned func is called.
func (h *acceptHold) hold() (release func()) {
	h.held.Store(true)
	return func() {
		h.held.Store(false)
		close(h.release)
	}
}

// drainBegan returns a channel closed once Drain has begun to hand over the
// listener's queue: from then on, closing the socket would reset the queued
// connections.
func drainBegan(x *running) <-chan struct{} { return x.s.draining }

// answer reads one response from br and reports whether it is a complete answer a
// drain may give: 200 "ok", or 503 with Retry-After, Connection: close and the
// draining code. It returns what was wrong, or "".
func answer(br *bufio.Reader) string {
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		return "read response: " + err.Error()
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return "read body: " + err.Error()
	case resp.StatusCode == 200 && string(body) == "ok":
		return ""
	case resp.StatusCode == 503 && resp.Close && resp.Header.Get("Retry-After") != "" &&
		strings.Contains(string(body), `"code":"draining"`):
		return ""
	}
	return "got " + resp.Status + " " + string(body)
}

func TestDrainAnswersTheBacklog(t *testing.T) {
	const n = 64
	ah := newAcceptHold()
	x := runWith(t, Config{}, newHold(), ah.install)
	x.mustGet("/ok", 200) // serving
	began := drainBegan(x)
	release := ah.hold()
	held := true
	defer func() {
		if held {
			release()
		}
	}()

	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dialRaw(t, x.s.Addr())
		if _, err := io.WriteString(conns[i], "GET /ok HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
			t.Fatalf("write request %d: %v", i, err)
		}
	}
	x.endServe()
	drained := make(chan error, 1)
	go func() { drained <- x.drain(failAfter) }()
	recv(t, began, "Drain to take over the listener")
	release()
	held = false

	cut := 0
	for i, c := range conns {
		if problem := answer(c.br); problem != "" {
			cut++
			if cut <= 3 {
				t.Errorf("connection %d of %d queued at Drain: %s", i, n, problem)
			}
		}
	}
	if cut > 0 {
		t.Errorf("%d of %d queued connections were cut, want every one answered", cut, n)
	}
	if err := recv(t, drained, "Drain"); err != nil {
		t.Errorf("Drain = %v", err)
	}
	// None was accepted before the Gate closed, so each was refused.
	if got := x.s.Stats().RefusedDraining; got != n {
		t.Errorf("RefusedDraining = %d, want %d", got, n)
	}
	// The first may have been accepted before the hold; the rest waited in the queue.
	if got := x.s.conns.t.Stats().BacklogAnswered; got < n-1 {
		t.Errorf("%d connections taken from the queue at Drain, want at least %d", got, n-1)
	}
	if rep := x.s.DrainReport(); !strings.Contains(rep, "backlog_answered=") {
		t.Errorf("DrainReport() = %q, want backlog_answered", rep)
	}
	if _, err := net.DialTimeout("tcp", x.s.Addr().String(), failAfter); err == nil {
		t.Error("the listening socket still accepts after Drain")
	}
}

func TestDrainAnswersTheBacklogOverTLS(t *testing.T) {
	const n = 16
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	ah := newAcceptHold()
	x := runWith(t, Config{CertFile: certFile, KeyFile: keyFile}, newHold(), ah.install)
	if _, _, err := x.get("/ok"); err != nil { // serving (a 400: plain HTTP to HTTPS)
		t.Fatal(err)
	}
	began := drainBegan(x)
	release := ah.hold()
	held := true
	defer func() {
		if held {
			release()
		}
	}()

	// Each client's TCP connection completes in the backlog; its TLS handshake
	// then waits for the server to accept it.
	dialled := make(chan struct{}, n)
	results := make(chan string, n)
	for range n {
		go func() {
			raw, err := net.DialTimeout("tcp", x.s.Addr().String(), failAfter)
			dialled <- struct{}{}
			if err != nil {
				results <- "dial: " + err.Error()
				return
			}
			defer raw.Close()
			raw.SetDeadline(time.Now().Add(failAfter))
			c := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
			if _, err := io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
				results <- "handshake and write: " + err.Error()
				return
			}
			results <- answer(bufio.NewReader(c))
		}()
	}
	for range n {
		recv(t, dialled, "a client to connect")
	}
	x.endServe()
	drained := make(chan error, 1)
	go func() { drained <- x.drain(failAfter) }()
	recv(t, began, "Drain to take over the listener")
	release()
	held = false

	for range n {
		if problem := recv(t, results, "a client's answer"); problem != "" {
			t.Errorf("a connection queued at Drain: %s", problem)
		}
	}
	if err := recv(t, drained, "Drain"); err != nil {
		t.Errorf("Drain = %v", err)
	}
	// None was accepted before the Gate closed, so each was refused.
	if got := x.s.Stats().RefusedDraining; got != n {
		t.Errorf("RefusedDraining = %d, want %d", got, n)
	}
}

// BenchmarkNewConnection measures a request on a connection of its own, accept
// included: dial, GET with Connection: close, read to EOF.
func BenchmarkNewConnection(b *testing.B) {
	s := serveForBench(b)
	addr := s.Addr().String()
	req := []byte("GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		c.Close()
	}
}

// plainListener hides its socket's type, so that the Server cannot take it over.
type plainListener struct{ net.Listener }

func TestDrainWithAListenerItCannotTakeOver(t *testing.T) {
	ln := plainListener{mustListen(t)}
	s, err := New(Config{}, newHold(), WithListener(ln))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bind(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop, served := make(chan struct{}), make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), stop) }()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + s.Addr().String() + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	close(stop)
	if err := recv(t, served, "Serve"); err != nil {
		t.Errorf("Serve = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), failAfter)
	defer cancel()
	if err := s.Drain(ctx); err != nil {
		t.Errorf("Drain = %v", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept on the listener after Drain = %v, want net.ErrClosed", err)
	}
}
