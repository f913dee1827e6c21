package httpentry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/internal/testenv"
)

func TestServerIsAnEntrypoint(t *testing.T) {
	var ep entrypoint.Entrypoint
	s, err := New(Config{}, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	ep = s
	if ep.Name() != "http" {
		t.Errorf("Name = %q, want http", ep.Name())
	}
	if _, ok := ep.(entrypoint.InFlighter); !ok {
		t.Error("Server is not an entrypoint.InFlighter")
	}
}

func TestLifecycle(t *testing.T) {
	t.Run("request in flight when stop closes completes with 200", func(t *testing.T) {
		h := newHold()
		x := run(t, Config{}, h)
		res := make(chan string, 1)
		go func() {
			_, body, err := x.get("/hold")
			if err != nil {
				body = err.Error()
			}
			res <- body
		}()
		recv(t, h.entered, "request to start")
		x.endServe()
		close(h.release)
		if got := recv(t, res, "response"); got != "held" {
			t.Errorf("in-flight request got %q, want held", got)
		}
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
	})

	t.Run("requests during the drain delay succeed, each telling its client to reconnect", func(t *testing.T) {
		x := run(t, Config{}, newHold())
		kept := dialRaw(t, x.s.Addr())
		if resp, _ := kept.do("GET", "/ok", ""); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("before stop: %d close=%v, want 200 kept alive", resp.StatusCode, resp.Close)
		}
		x.endServe() // Serve returned; the Host now waits out the drain delay

		// The keep-alive connection opened before the stop is still served, and told
		// to close after its answer; so is each new one.
		if resp, _ := kept.do("GET", "/ok", ""); resp.StatusCode != 200 || !resp.Close {
			t.Errorf("kept-alive connection: %d close=%v, want 200 with Connection: close", resp.StatusCode, resp.Close)
		}
		for i := range 3 {
			fresh := dialRaw(t, x.s.Addr())
			if resp, _ := fresh.do("GET", "/ok", ""); resp.StatusCode != 200 || !resp.Close {
				t.Errorf("new connection %d: %d close=%v, want 200 with Connection: close", i, resp.StatusCode, resp.Close)
			}
		}
		st := x.s.Stats()
		if st.RefusedDraining != 0 {
			t.Errorf("refused %d requests before Drain", st.RefusedDraining)
		}
		if st.MovedOff != 4 {
			t.Errorf("MovedOff = %d, want the 4 connections answered after the stop", st.MovedOff)
		}
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
		if rep := x.s.DrainReport(); !strings.HasPrefix(rep, "moved_off=4 ") {
			t.Errorf("DrainReport() = %q, want moved_off=4 first", rep)
		}
	})

	t.Run("a response in flight at Drain tells the keep-alive client Connection: close", func(t *testing.T) {
		h := newHold()
		x := run(t, Config{}, h)
		c := dialRaw(t, x.s.Addr())
		if resp, _ := c.do("GET", "/ok", ""); resp.Close {
			t.Fatal("first response already closes the connection")
		}
		if _, err := c.Write([]byte("GET /hold HTTP/1.1\r\nHost: test\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		recv(t, h.entered, "request to start")
		x.endServe()
		drained := make(chan error, 1)
		go func() { drained <- x.drain(failAfter) }()
		recv(t, x.s.draining, "Drain to close the gate")
		close(h.release)
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatalf("read response: %v", err)
		}
		// ReadResponse turns the Connection: close header into resp.Close.
		if resp.StatusCode != 200 || !resp.Close {
			t.Errorf("got %d close=%v, want 200 with Connection: close", resp.StatusCode, resp.Close)
		}
		if rest, err := c.readToEOF(); err != nil || rest != "held" {
			t.Errorf("rest of connection = %q, %v; want the body then EOF", rest, err)
		}
		if err := recv(t, drained, "Drain"); err != nil {
			t.Errorf("Drain = %v", err)
		}
	})

	t.Run("a request on a kept-alive connection after the gate closed gets 503 draining", func(t *testing.T) {
		x := run(t, Config{RetryAfter: 1500 * time.Millisecond}, newHold())
		c := dialRaw(t, x.s.Addr())
		if resp, _ := c.do("GET", "/ok", ""); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("first request: %d close=%v", resp.StatusCode, resp.Close)
		}
		x.endServe()
		// Drain's first step, on its own, so that this connection is still open when the
		// request arrives (Drain's next step closes idle connections).
		x.s.gate.Close()

		resp, body := c.do("POST", "/ok", "hello", "Content-Type: text/plain\r\n")
		if resp.StatusCode != 503 || !resp.Close {
			t.Errorf("got %d close=%v, want 503 with Connection: close", resp.StatusCode, resp.Close)
		}
		for k, want := range map[string]string{"Retry-After": "2", "Content-Type": "application/json"} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if rest, err := c.readToEOF(); err != nil || rest != "" {
			t.Errorf("after the response: %q, %v; want a clean EOF", rest, err)
		}
		if !strings.Contains(body, `"code":"draining"`) {
			t.Errorf("body = %q, want code draining", body)
		}
		if got := x.s.Stats().RefusedDraining; got != 1 {
			t.Errorf("RefusedDraining = %d, want 1", got)
		}
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
	})

	t.Run("a request that outlives Drain's ctx is cut at Stop", func(t *testing.T) {
		h := newHold()
		x := run(t, Config{}, h)
		res := make(chan error, 1)
		go func() {
			_, _, err := x.get("/hold")
			res <- err
		}()
		recv(t, h.entered, "request to start")
		x.endServe()
		err := x.drain(200 * time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Drain = %v, want DeadlineExceeded", err)
		}
		if n := x.s.InFlight(); n != 1 {
			t.Errorf("InFlight after Drain = %d, want 1", n)
		}
		// The one request, on its one connection, is counted once, as InFlight says.
		if err == nil || !strings.Contains(err.Error(), "1 requests still in flight") {
			t.Errorf("Drain = %v, want it to count the one request once", err)
		}
		select {
		case err := <-res:
			t.Fatalf("request ended before Stop: %v", err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), failAfter)
		defer cancel()
		if err := x.s.Stop(ctx); err != nil {
			t.Errorf("Stop = %v", err)
		}
		if err := recv(t, res, "client to see the cut"); err == nil {
			t.Error("client got a response, want an error")
		}
		if n := x.s.InFlight(); n != 0 {
			t.Errorf("InFlight after Stop = %d, want 0", n)
		}
	})

	t.Run("Drain before Serve closes the listener and Serve then serves nothing", func(t *testing.T) {
		s, err := New(Config{Addr: "127.0.0.1:0"}, newHold())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Bind(context.Background()); err != nil {
			t.Fatal(err)
		}
		addr := s.Addr().String()
		if err := s.Drain(context.Background()); err != nil {
			t.Errorf("Drain = %v", err)
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Error("listener still open after Drain")
		}
		if err := s.Serve(context.Background(), make(chan struct{})); err != nil {
			t.Errorf("Serve after Drain = %v, want nil", err)
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop = %v", err)
		}
	})

	t.Run("misordered calls are errors", func(t *testing.T) {
		s, err := New(Config{Addr: "127.0.0.1:0"}, newHold())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Serve(context.Background(), nil); err == nil {
			t.Error("Serve before Bind = nil, want an error")
		}
		if err := s.Drain(context.Background()); err != nil {
			t.Errorf("Drain before Bind = %v, want nil", err)
		}
		if err := s.Bind(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := s.Bind(context.Background()); err == nil {
			t.Error("second Bind = nil, want an error")
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop = %v", err)
		}
	})

	t.Run("Serve fails when the listener breaks before stop", func(t *testing.T) {
		ln := testenv.NewBrokenListener(t)
		s, err := New(Config{}, newHold(), WithListener(ln))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Bind(context.Background()); err != nil {
			t.Fatal(err)
		}
		err = s.Serve(context.Background(), make(chan struct{}))
		if !errors.Is(err, testenv.ErrSocketBroke) {
			t.Errorf("Serve = %v, want the listener's error", err)
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop = %v", err)
		}
	})

	t.Run("Serve returns ctx.Err when the Host gives up", func(t *testing.T) {
		h := newHold()
		s, err := New(Config{Addr: "127.0.0.1:0"}, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Bind(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- s.Serve(ctx, make(chan struct{})) }()
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		res := make(chan error, 1)
		go func() {
			resp, err := (&http.Client{Transport: tr}).Get("http://" + s.Addr().String() + "/hold")
			if err == nil {
				resp.Body.Close()
			}
			res <- err
		}()
		recv(t, h.entered, "request to start")
		cancel()
		if err := recv(t, served, "Serve"); !errors.Is(err, context.Canceled) {
			t.Errorf("Serve = %v, want Canceled", err)
		}
		if err := recv(t, res, "client"); err == nil {
			t.Error("request survived, want it cut")
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop = %v", err)
		}
	})
}

func TestBind(t *testing.T) {
	t.Run("an address in use is named in the error", func(t *testing.T) {
		taken := mustListen(t)
		defer taken.Close()
		addr := taken.Addr().String()
		s, err := New(Config{Addr: addr}, newHold())
		if err != nil {
			t.Fatal(err)
		}
		err = s.Bind(context.Background())
		want := "http: listen tcp " + addr + ": bind: address already in use"
		if err == nil || err.Error() != want {
			t.Errorf("Bind = %v, want %q", err, want)
		}
		if s.Addr() != nil {
			t.Errorf("Addr after failed Bind = %v, want nil", s.Addr())
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop after failed Bind = %v", err)
		}
	})

	t.Run("a given listener is used as is and closed by Stop", func(t *testing.T) {
		ln := mustListen(t)
		s, err := New(Config{}, newHold(), WithListener(ln))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Bind(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s.Addr() != ln.Addr() {
			t.Errorf("Addr = %v, want %v", s.Addr(), ln.Addr())
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop = %v", err)
		}
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Stop = %v, want ErrClosed", err)
		}
	})
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
