package httpentry

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint/conntrack"
)

// pipeListener hands out the server ends of net.Pipes, one per Accept.
type pipeListener struct{ conns chan net.Conn }

func (l pipeListener) Accept() (net.Conn, error) { return <-l.conns, nil }
func (l pipeListener) Close() error              { return nil }
func (l pipeListener) Addr() net.Addr            { return &net.TCPAddr{} }

func TestConnSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, err := newConnSet("test", func(ln net.Listener) net.Listener { return ln })
		if err != nil {
			t.Fatal(err)
		}
		pl := pipeListener{conns: make(chan net.Conn, 2)}
		ln := cs.t.Listener(pl)
		accept := func() *conntrack.Conn {
			s, c := net.Pipe()
			t.Cleanup(func() { s.Close(); c.Close() })
			pl.conns <- s
			tc, err := ln.AcceptConn()
			if err != nil {
				t.Fatal(err)
			}
			return tc
		}
		if err := cs.wait(context.Background()); err != nil {
			t.Fatalf("wait with no connection = %v", err)
		}
		a, b := accept(), accept()
		cs.track(a, http.StateNew) // accepted, request not read yet: busy
		cs.track(b, http.StateNew)
		cs.track(b, http.StateActive)
		cs.track(b, http.StateActive) // counted once
		if n := cs.busyCount(); n != 2 {
			t.Fatalf("busy = %d, want 2", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := cs.wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait with busy connections = %v", err)
		}

		waited := make(chan time.Time, 1)
		go func() {
			if err := cs.wait(context.Background()); err != nil {
				t.Error(err)
			}
			waited <- time.Now()
		}()
		time.Sleep(time.Second)
		cs.track(a, http.StateIdle) // HTTP/1 idle: quiet
		time.Sleep(time.Second)
		start := time.Now()
		b.Close()
		cs.track(b, http.StateClosed)
		if at := <-waited; !at.Equal(start) {
			t.Errorf("wait returned %v after the last connection went quiet, want at once", at.Sub(start))
		}
		if n, open := cs.busyCount(), cs.t.Open(); n != 0 || open != 1 {
			t.Errorf("busy = %d, open = %d; want 0 busy and the idle one followed", n, open)
		}
		cs.track(a, http.StateHijacked) // followed by the Gate from now on
		if open := cs.t.Open(); open != 0 {
			t.Errorf("%d connections still followed after the hijack", open)
		}
	})
}

// The ConnState hook runs twice per request (active, then idle): it must allocate
// nothing.
func TestTrackAllocatesNothing(t *testing.T) {
	cs, err := newConnSet("test", func(ln net.Listener) net.Listener { return ln })
	if err != nil {
		t.Fatal(err)
	}
	pl := pipeListener{conns: make(chan net.Conn, 1)}
	s, c := net.Pipe()
	defer s.Close()
	defer c.Close()
	pl.conns <- s
	tc, err := cs.t.Listener(pl).AcceptConn()
	if err != nil {
		t.Fatal(err)
	}
	pc := &pipeConn{Conn: tc, cs: cs} // as net/http sees a plaintext connection
	if n := testing.AllocsPerRun(1000, func() {
		cs.track(pc, http.StateActive)
		cs.track(pc, http.StateIdle)
	}); n != 0 {
		t.Errorf("track allocates %.1f times per request, want 0", n)
	}
	if cs.busyCount() != 0 {
		t.Errorf("busy = %d after active then idle", cs.busyCount())
	}
}

// serveForBench starts a Server answering "ok" on a loopback port, drained when b
// ends.
func serveForBench(b *testing.B) *Server {
	b.Helper()
	s, err := New(Config{Addr: "127.0.0.1:0"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Bind(context.Background()); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), stop) }()
	b.Cleanup(func() {
		close(stop)
		<-served
		ctx, cancel := context.WithTimeout(context.Background(), failAfter)
		defer cancel()
		if err := s.Drain(ctx); err != nil {
			b.Error(err)
		}
	})
	return s
}

// BenchmarkKeepAliveRequest measures a request on a kept-alive connection, the
// ConnState hook's two calls included.
func BenchmarkKeepAliveRequest(b *testing.B) {
	s := serveForBench(b)
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	req := []byte("GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
