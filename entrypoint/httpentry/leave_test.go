package httpentry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

func TestMovesClientsOff(t *testing.T) {
	t.Run("from the Monitor's draining on, before the stop, every answer closes its connection", func(t *testing.T) {
		var state health.State
		state.Set(health.Ready)
		m, err := health.NewMonitor(health.MonitorConfig{}, &state)
		if err != nil {
			t.Fatal(err)
		}
		x := runWith(t, Config{}, newHold(), func(s *Server) { s.UseMonitor(m) })
		kept := dialRaw(t, x.s.Addr())
		if resp, _ := kept.do("GET", "/ok", ""); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("while ready: %d close=%v, want 200 kept alive", resp.StatusCode, resp.Close)
		}
		state.Set(health.Draining) // Host.BeginDraining, PreStop: Serve still runs

		// The subscription hands the verdict over on its own goroutine: the first
		// answers may still keep their connection; each is a new connection.
		for i := 0; ; i++ {
			c := dialRaw(t, x.s.Addr())
			resp, _ := c.do("GET", "/ok", "")
			if resp.StatusCode != 200 {
				t.Fatalf("request %d during the drain delay: %d", i, resp.StatusCode)
			}
			if resp.Close {
				break
			}
			if i == 10000 {
				t.Fatal("no answer said Connection: close after readiness was withdrawn")
			}
		}
		if resp, _ := kept.do("GET", "/ok", ""); resp.StatusCode != 200 || !resp.Close {
			t.Errorf("kept-alive connection: %d close=%v, want 200 with Connection: close", resp.StatusCode, resp.Close)
		}
		if got := x.s.Stats().MovedOff; got != 2 {
			t.Errorf("MovedOff = %d, want 2", got)
		}
	})

	t.Run("an upgrade request keeps its own Connection header", func(t *testing.T) {
		h := newHijacker()
		x := run(t, Config{}, h)
		x.endServe()
		c := dialRaw(t, x.s.Addr())
		resp, _ := c.do("GET", "/ws", "", upgrade...)
		if resp.StatusCode != http.StatusSwitchingProtocols || resp.Close {
			t.Errorf("upgrade after the stop: %d close=%v, want 101 without Connection: close", resp.StatusCode, resp.Close)
		}
		recv(t, h.hijacked, "hijack")
		c.Close()
		h.wg.Wait()
	})
}

func TestStreamRecognisedByItsResponse(t *testing.T) {
	t.Run("an SSE answer is a stream without Accept: text/event-stream", func(t *testing.T) {
		const n = 3
		h := newSSE()
		x := run(t, Config{StreamDrainWindow: 100 * time.Millisecond}, h)
		out := make(chan ended, n)
		for range n {
			go func() {
				resp, err := x.client.Get(x.base + "/events") // as curl -sN sends it
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
		x.endServe()
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
		collect(t, out, n) // each ends cleanly with the bye event
		if got := x.s.InFlight(); got != 0 {
			t.Errorf("InFlight = %d after Drain, want 0", got)
		}
	})

	t.Run("DrainStreams reaches one before the Gate closes", func(t *testing.T) {
		h := newSSE()
		x := run(t, Config{StreamDrainWindow: 50 * time.Millisecond}, h)
		out := make(chan ended, 1)
		go func() {
			resp, err := x.client.Get(x.base + "/events")
			if err != nil {
				out <- ended{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			out <- ended{time.Now(), string(b), err}
		}()
		recv(t, h.opened, "stream to open")
		x.endServe()
		ctx, cancel := context.WithTimeout(context.Background(), failAfter)
		defer cancel()
		if err := x.s.DrainStreams(ctx, time.Second); err != nil {
			t.Errorf("DrainStreams = %v", err)
		}
		collect(t, out, 1)
		x.mustGet("/ok", 200) // the other requests are served still, on a new connection
	})

	t.Run("WithStreams makes a declared route a stream", func(t *testing.T) {
		opened := make(chan struct{}, 1)
		feed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"n\":1}\n")
			w.(http.Flusher).Flush()
			opened <- struct{}{}
			<-r.Context().Done()
			if errors.Is(context.Cause(r.Context()), entrypoint.ErrStreamDrained) {
				io.WriteString(w, "{\"bye\":true}\n")
			}
		})
		x := run(t, Config{StreamDrainWindow: 50 * time.Millisecond}, feed, WithStreams("GET /feed"))
		out := make(chan ended, 1)
		go func() {
			resp, err := x.client.Get(x.base + "/feed")
			if err != nil {
				out <- ended{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			out <- ended{time.Now(), string(b), err}
		}()
		recv(t, opened, "feed to open")
		x.endServe()
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
		if e := recv(t, out, "feed to end"); e.err != nil || !strings.HasSuffix(e.body, "{\"bye\":true}\n") {
			t.Errorf("feed ended with %v after %q, want a clean end with the bye line", e.err, e.body)
		}
	})

	t.Run("a malformed WithStreams pattern is a ConfigError", func(t *testing.T) {
		_, err := New(Config{Addr: "127.0.0.1:0"}, http.NotFoundHandler(), WithStreams("GET /a/{"))
		var ce *fault.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "WithStreams") {
			t.Errorf("New = %v, want a ConfigError naming WithStreams", err)
		}
	})

	t.Run("an SSE answer leaves the admission limiter", func(t *testing.T) {
		h := newSSE()
		x := run(t, Config{}, h, WithAdmission(admission.Config{MinLimit: 1, MaxLimit: 1, InitialLimit: 1}))
		ends := make(chan ended, 1)
		go func() {
			resp, err := x.client.Get(x.base + "/events")
			if err != nil {
				ends <- ended{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			ends <- ended{time.Now(), string(b), err}
		}()
		recv(t, h.opened, "stream to open")
		// The limit is one request: the stream holding it would shed this one.
		x.mustGet("/ok", 200)
		if got := x.s.InFlight(); got != 1 {
			t.Errorf("InFlight = %d, want the stream", got)
		}
		x.endServe()
		if err := x.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
		collect(t, ends, 1)
	})
}
