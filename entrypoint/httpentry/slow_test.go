package httpentry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// uploadHandler reads the whole body of /upload and reports how that ended.
type uploadHandler struct {
	entered chan struct{}
	read    chan error
}

func (h *uploadHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.entered <- struct{}{}
	_, err := io.Copy(io.Discard, r.Body)
	h.read <- err
	if err != nil {
		http.Error(w, "body", http.StatusRequestTimeout)
		return
	}
	io.WriteString(w, "stored")
}

func TestSlowClients(t *testing.T) {
	t.Run("a slow upload is cut at ReadTimeout and Drain finishes within the grace", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const readTimeout = 300 * time.Millisecond
			h := &uploadHandler{entered: make(chan struct{}, 10), read: make(chan error, 10)}
			x := runInBubble(t, Config{ReadTimeout: readTimeout}, h)
			// 10 clients sending a 1000-byte body one byte every 50 ms: 50 s each at
			// that pace.
			const clients = 10
			var paced sync.WaitGroup
			quit := make(chan struct{}) // the bubble ends only once every client has
			defer func() { close(quit); paced.Wait() }()
			for range clients {
				c := x.dial()
				// The client reads what the server sends, as a kernel's socket buffer
				// would take it: a net.Pipe has none, and an unread 408 blocks the server.
				go io.Copy(io.Discard, c.Conn)
				paced.Go(func() {
					fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n")
					for range 1000 {
						if _, err := c.Write([]byte{'x'}); err != nil {
							return
						}
						select { // the client's pace, not synchronisation
						case <-time.After(50 * time.Millisecond):
						case <-quit:
							return
						}
					}
				})
			}
			for range clients {
				recv(t, h.entered, "upload to reach its handler")
			}
			x.endServe()
			start := time.Now()
			if err := x.drain(2 * time.Second); err != nil {
				t.Errorf("Drain = %v, want nil: a slow upload must not overrun the grace", err)
			}
			if took := time.Since(start); took > readTimeout {
				t.Errorf("Drain took %v of virtual time, want at most ReadTimeout (%v)", took, readTimeout)
			}
			for range clients {
				if err := recv(t, h.read, "handler's body read"); err == nil {
					t.Error("a body sent at 20 bytes/s was read in full within ReadTimeout")
				}
			}
		})
	})

	t.Run("ReadTimeout does not cut a stream", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const readTimeout = 100 * time.Millisecond
			h := newSSE()
			x := runInBubble(t, Config{ReadTimeout: readTimeout, StreamDrainWindow: 50 * time.Millisecond}, h)
			ends := openStreams(t, x, h, 3, "")
			time.Sleep(4 * readTimeout) // let ReadTimeout pass; the streams must outlive it
			x.endServe()
			if err := x.drain(failAfter); err != nil {
				t.Errorf("Drain = %v", err)
			}
			collect(t, ends, 3) // each ended by the drain, with its bye event
		})
	})

	t.Run("ReadTimeout does not cut a hijacked connection", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const readTimeout = 100 * time.Millisecond
			echoed := make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, brw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
				line, err := brw.ReadString('\n') // sent by the client after ReadTimeout
				if err == nil {
					io.WriteString(c, line)
				}
				close(echoed)
			})
			x := runInBubble(t, Config{ReadTimeout: readTimeout}, h)
			c := x.dial()
			if resp, _ := c.do("GET", "/ws", "", upgrade...); resp.StatusCode != 101 {
				t.Fatalf("status = %d, want 101", resp.StatusCode)
			}
			time.Sleep(4 * readTimeout) // let ReadTimeout pass; the connection must outlive it
			io.WriteString(c, "ping\n")
			// Read the echo before waiting for the handler: a net.Pipe has no buffer,
			// so the handler's write returns only once it is read.
			if line, err := c.br.ReadString('\n'); err != nil || line != "ping\n" {
				t.Errorf("echo = %q, %v; want ping", line, err)
			}
			recv(t, echoed, "the handler to read after ReadTimeout")
			x.endServe()
			if err := x.drain(failAfter); err != nil {
				t.Errorf("Drain = %v", err)
			}
		})
	})
}

// TestStreamDrainFitsShortGrace is the case a polling drain reported as a timeout:
// streams spread over nearly all of a 2–3 s grace (virtual time), beside idle keep-alive
// connections, end in time, so Drain must say so.
func TestStreamDrainFitsShortGrace(t *testing.T) {
	for _, grace := range []time.Duration{2 * time.Second, 3 * time.Second} {
		t.Run(grace.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 10
				h := newSSE()
				x := runInBubble(t, Config{StreamDrainWindow: time.Hour}, h)
				for range 5 { // keep-alive connections left idle
					x.mustGet("/ok", 200)
				}
				ends := openStreams(t, x, h, n, "")
				x.endServe()
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), grace)
				defer cancel()
				err := x.s.Drain(ctx)
				took := time.Since(start)
				if err != nil {
					t.Errorf("Drain = %v after %v, want nil: every stream ended in time", err, took)
				}
				if errors.Is(err, context.DeadlineExceeded) || took >= grace {
					t.Errorf("Drain took %v of a %v grace", took, grace)
				}
				at := collect(t, ends, n)
				t.Logf("grace %v: Drain returned after %v, %v after the last stream ended",
					grace, took, start.Add(took).Sub(at[n-1]).Round(time.Millisecond))
				if last := at[n-1].Sub(start); last > grace-grace/10 {
					t.Errorf("last stream ended %v after Drain began, want by %v", last, grace-grace/10)
				}
				if span := at[n-1].Sub(at[0]); span < grace/2 {
					t.Errorf("streams ended within %v, want spread over most of the grace", span)
				}
				if got := x.s.InFlight(); got != 0 {
					t.Errorf("InFlight after Drain = %d", got)
				}
				if strings.Contains(fmt.Sprint(err), "in flight") {
					t.Errorf("Drain blamed work in flight: %v", err)
				}
			})
		})
	}
}
