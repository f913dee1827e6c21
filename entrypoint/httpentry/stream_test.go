package httpentry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
)

// sseHandler serves /events as a Server-Sent Events stream that lasts until its
// ctx is done, ending with a "bye" event when the server's drain ended it. Any other
// path answers "ok".
type sseHandler struct {
	opened chan struct{}
}

func newSSE() *sseHandler { return &sseHandler{opened: make(chan struct{}, 100)} }

func (h *sseHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/events" {
		io.WriteString(w, "ok")
		return
	}
	ctx := r.Context()
	if r.URL.Query().Has("explicit") {
		ctx = StreamContext(r)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "event: hello\ndata: 1\n\n")
	w.(http.Flusher).Flush()
	h.opened <- struct{}{}
	<-ctx.Done()
	if errors.Is(context.Cause(ctx), entrypoint.ErrStreamDrained) {
		io.WriteString(w, "event: bye\ndata: reconnect\n\n")
	}
}

// ended is what an SSE client saw when its stream ended.
type ended struct {
	at   time.Time
	body string
	err  error
}

// openStreams opens n SSE streams and returns where their ends will be reported,
// once the handler has seen every one of them open.
func openStreams(t *testing.T, x *running, h *sseHandler, n int, query string) <-chan ended {
	t.Helper()
	out := make(chan ended, n)
	for range n {
		go func() {
			req, _ := http.NewRequest("GET", x.base+"/events"+query, nil)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := x.client.Do(req)
			if err != nil {
				out <- ended{time.Now(), "", err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			out <- ended{time.Now(), string(b), err}
		}()
	}
	for range n {
		recv(t, h.opened, "stream to open")
	}
	return out
}

// collect waits for n stream ends, checks each ended cleanly with the bye event,
// and returns their times in order.
func collect(t *testing.T, ch <-chan ended, n int) []time.Time {
	t.Helper()
	var at []time.Time
	for range n {
		e := recv(t, ch, "stream to end")
		if e.err != nil || !strings.Contains(e.body, "event: bye") {
			t.Errorf("stream ended with %v after %q, want a clean end with the bye event", e.err, e.body)
		}
		at = append(at, e.at)
	}
	slices.SortFunc(at, time.Time.Compare)
	return at
}

// maxWithin is the most ends that fall within any span of d.
func maxWithin(at []time.Time, d time.Duration) int {
	most := 0
	for i := range at {
		j := i
		for j < len(at) && at[j].Sub(at[i]) < d {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

func TestStreams(t *testing.T) {
	t.Run("Drain closes 20 SSE streams spread over the window, a few at a time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const n, window = 20, time.Second
			h := newSSE()
			x := runInBubble(t, Config{StreamDrainWindow: window}, h)
			ends := openStreams(t, x, h, n, "")
			if got := x.s.InFlight(); got != n {
				t.Errorf("InFlight = %d, want %d", got, n)
			}
			x.endServe()
			start := time.Now()
			if err := x.drain(failAfter); err != nil {
				t.Errorf("Drain = %v", err)
			}
			at := collect(t, ends, n)
			if span := at[n-1].Sub(at[0]); span < window/2 {
				t.Errorf("streams closed within %v, want spread over at least %v", span, window/2)
			}
			if most := maxWithin(at, window/10); most > 5 {
				t.Errorf("%d streams closed within %v, want a few at a time", most, window/10)
			}
			if last := at[n-1].Sub(start); last > window {
				t.Errorf("last stream closed %v after Drain began, want within the window", last)
			}
		})
	})

	t.Run("StreamContext is the drain signal of a stream", func(t *testing.T) {
		h := newSSE()
		x := run(t, Config{StreamDrainWindow: 100 * time.Millisecond}, h)
		ends := openStreams(t, x, h, 2, "?explicit")
		x.endServe()
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
		collect(t, ends, 2)
	})

	t.Run("DrainStreams as a drain hook closes streams while still serving", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const n, window = 4, 400 * time.Millisecond
			h := newSSE()
			x := runInBubble(t, Config{StreamDrainWindow: window}, h)
			ends := openStreams(t, x, h, n, "")
			x.endServe()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := x.s.DrainStreams(ctx, 2*time.Second); err != nil {
				t.Errorf("DrainStreams = %v", err)
			}
			at := collect(t, ends, n)
			if span := at[n-1].Sub(at[0]); span < window/2 {
				t.Errorf("streams closed within %v, want spread over at least %v", span, window/2)
			}
			x.mustGet("/ok", 200)
			if got := x.s.Stats().RefusedDraining; got != 0 {
				t.Errorf("RefusedDraining = %d, want 0", got)
			}
			if err := x.drain(failAfter); err != nil {
				t.Errorf("Drain = %v", err)
			}
		})
	})

	t.Run("a stream that ignores the drain is cut at Stop", func(t *testing.T) {
		opened := make(chan struct{}, 1)
		x := run(t, Config{StreamDrainWindow: 50 * time.Millisecond}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			opened <- struct{}{}
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for range tick.C { // ignores its ctx; only a failing write stops it
				if _, err := io.WriteString(w, "data: tick\n\n"); err != nil {
					return
				}
				if err := http.NewResponseController(w).Flush(); err != nil {
					return
				}
			}
		}))
		res := make(chan ended, 1)
		go func() {
			req, _ := http.NewRequest("GET", x.base+"/events", nil)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := x.client.Do(req)
			if err != nil {
				res <- ended{err: err}
				return
			}
			defer resp.Body.Close()
			_, err = io.Copy(io.Discard, resp.Body)
			res <- ended{err: err}
		}()
		recv(t, opened, "stream to open")
		x.endServe()
		if err := x.drain(300 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Drain = %v, want DeadlineExceeded", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), failAfter)
		defer cancel()
		if err := x.s.Stop(ctx); err != nil {
			t.Errorf("Stop = %v", err)
		}
		if e := recv(t, res, "client"); e.err == nil {
			t.Error("stream ended cleanly, want it cut")
		}
	})
}

// hijacker takes over /ws (an upgrade request, so a stream) and /raw (a plain
// request) and answers 101. Its connection then outlives the handler, in a goroutine
// that, with ?watch, waits for StreamContext's cancellation, reports it, waits for
// proceed and says "bye" before closing; otherwise (or with &ignore) it reads until
// the server closes the connection.
type hijacker struct {
	wg       sync.WaitGroup
	hijacked chan struct{}
	reached  chan struct{}
	proceed  chan struct{}
}

func newHijacker() *hijacker {
	return &hijacker{hijacked: make(chan struct{}, 10), reached: make(chan struct{}, 10), proceed: make(chan struct{})}
}

func (h *hijacker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var ctx context.Context
	if q.Has("watch") {
		ctx = StreamContext(r)
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	brw.Flush()
	h.wg.Go(func() {
		defer c.Close()
		if ctx == nil || q.Has("ignore") {
			io.Copy(io.Discard, c)
			return
		}
		<-ctx.Done()
		h.reached <- struct{}{}
		<-h.proceed
		io.WriteString(c, "bye\n")
	})
	h.hijacked <- struct{}{}
}

var upgrade = []string{"Connection: Upgrade\r\n", "Upgrade: test\r\n"}

func TestHijacked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		path    string
		headers []string
	}{
		{"an upgraded connection nobody watches is closed by the drain", "/ws", upgrade},
		{"a hijacked plain request is closed by the drain", "/raw", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHijacker()
			x := run(t, Config{}, h)
			c := dialRaw(t, x.s.Addr())
			if resp, _ := c.do("GET", tc.path, "", tc.headers...); resp.StatusCode != 101 {
				t.Fatalf("status = %d, want 101", resp.StatusCode)
			}
			recv(t, h.hijacked, "hijack")
			if got := x.s.InFlight(); got != 1 {
				t.Errorf("InFlight = %d, want 1", got)
			}
			x.endServe()
			if err := x.drain(failAfter); err != nil {
				t.Errorf("Drain = %v", err)
			}
			if rest, err := c.readToEOF(); err != nil || rest != "" {
				t.Errorf("connection ended with %q, %v; want EOF", rest, err)
			}
			if got := x.s.InFlight(); got != 0 {
				t.Errorf("InFlight after Drain = %d, want 0", got)
			}
			h.wg.Wait()
		})
	}

	t.Run("a watched connection is left to its handler, and Drain waits for it", func(t *testing.T) {
		h := newHijacker()
		x := run(t, Config{}, h)
		c := dialRaw(t, x.s.Addr())
		c.do("GET", "/ws?watch", "", upgrade...)
		recv(t, h.hijacked, "hijack")
		x.endServe()
		drained := make(chan error, 1)
		go func() { drained <- x.drain(failAfter) }()
		recv(t, h.reached, "the drain to reach the stream")
		select {
		case err := <-drained:
			t.Fatalf("Drain returned %v with the connection still open", err)
		default:
		}
		if got := x.s.InFlight(); got != 1 {
			t.Errorf("InFlight = %d, want 1", got)
		}
		close(h.proceed)
		if rest, err := c.readToEOF(); err != nil || rest != "bye\n" {
			t.Errorf("connection ended with %q, %v; want bye then EOF", rest, err)
		}
		if err := recv(t, drained, "Drain"); err != nil {
			t.Errorf("Drain = %v", err)
		}
		h.wg.Wait()
	})

	t.Run("a watched connection whose handler ignores the drain is cut at Stop", func(t *testing.T) {
		h := newHijacker()
		x := run(t, Config{}, h)
		c := dialRaw(t, x.s.Addr())
		c.do("GET", "/ws?watch&ignore", "", upgrade...)
		recv(t, h.hijacked, "hijack")
		x.endServe()
		if err := x.drain(200 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Drain = %v, want DeadlineExceeded", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), failAfter)
		defer cancel()
		if err := x.s.Stop(ctx); err != nil {
			t.Errorf("Stop = %v", err)
		}
		if rest, err := c.readToEOF(); err != nil || rest != "" {
			t.Errorf("connection ended with %q, %v; want EOF", rest, err)
		}
		if got := x.s.InFlight(); got != 0 {
			t.Errorf("InFlight after Stop = %d, want 0", got)
		}
		h.wg.Wait()
	})
}
