package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sentryEvent is the part of a Sentry event the test reads.
type sentryEvent struct {
	Tags      map[string]string `json:"tags"`
	Exception []struct {
		Value      string `json:"value"`
		Stacktrace *struct {
			Frames []struct {
				Function string `json:"function"`
				Module   string `json:"module"`
			} `json:"frames"`
		} `json:"stacktrace"`
	} `json:"exception"`
}

// sentryStandIn is a Sentry endpoint on loopback: it keeps the events of the
// envelopes it is sent.
type sentryStandIn struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events []sentryEvent
}

func newSentryStandIn(t *testing.T) *sentryStandIn {
	s := &sentryStandIn{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.envelope))
	t.Cleanup(s.srv.Close)
	return s
}

// envelope reads an envelope: a header line, then a header line and a payload line
// for each item.
func (s *sentryStandIn) envelope(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, _ := io.ReadAll(body)
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	sc.Scan()
	for sc.Scan() {
		var item struct{ Type string }
		_ = json.Unmarshal(sc.Bytes(), &item)
		if !sc.Scan() {
			break
		}
		var ev sentryEvent
		if item.Type == "event" && json.Unmarshal(sc.Bytes(), &ev) == nil {
			s.mu.Lock()
			s.events = append(s.events, ev)
			s.mu.Unlock()
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (s *sentryStandIn) got() []sentryEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sentryEvent(nil), s.events...)
}

// TestSentry: with SENTRY_DSN pointing at a stand-in, an essential entrypoint's
// failure arrives as an event naming the entrypoint by the time the process has
// exited 1, and the DSN's key appears nowhere in the log.
func TestSentry(t *testing.T) {
	s := newSentryStandIn(t)
	dsn := strings.Replace(s.srv.URL, "http://", "http://dsnsecretkey@", 1) + "/7"
	p, _ := startExample(t, "SENTRY_DSN="+dsn, "SENTRY_ENVIRONMENT=test", "EXAMPLE_FAIL_AFTER=300ms")
	if code, err := p.Wait(20 * time.Second); err != nil || code != 1 {
		t.Fatalf("exit code %d (%v), want 1", code, err)
	}
	var found bool
	for _, ev := range s.got() {
		if ev.Tags["entrypoint"] == "chaos" && ev.Tags["stage"] == "serve" && ev.Tags["service"] == "orders" &&
			len(ev.Tags["trace_id"]) == 32 && len(ev.Exception) > 0 && strings.Contains(ev.Exception[0].Value, "EXAMPLE_FAIL_AFTER") {
			found = true
		}
	}
	if !found {
		t.Errorf("no event for the chaos entrypoint's failure among %+v", s.got())
	}
	if strings.Contains(strings.Join(p.Lines(), "\n"), "dsnsecretkey") {
		t.Error("the DSN's key reached the log")
	}
}

// TestSentryHandlerPanic: a handler panic (the test route GET /panic) arrives at the
// stand-in Sentry with its stack — the panicking handler among its frames — tagged
// with the entrypoint, the route and the trace id, and the server keeps serving.
func TestSentryHandlerPanic(t *testing.T) {
	s := newSentryStandIn(t)
	dsn := strings.Replace(s.srv.URL, "http://", "http://dsnsecretkey@", 1) + "/7"
	httpAddr := freeAddr(t)
	p, _ := startExample(t, "HTTP_ADDR="+httpAddr, "SENTRY_DSN="+dsn)
	mustLog(t, p, stage("serve"), 20*time.Second)
	resp, err := http.Get("http://" + httpAddr + "/panic")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("GET /panic = %d, want 500", resp.StatusCode)
	}
	resp, err = http.Get("http://" + httpAddr + "/hello")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /hello after the panic = %v, %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	p.Signal(syscall.SIGTERM)
	if code, err := p.Wait(20 * time.Second); err != nil || code != 0 {
		t.Fatalf("exit code %d (%v), want 0", code, err)
	}
	var found bool
	for _, ev := range s.got() {
		if ev.Tags["entrypoint"] != "http" || ev.Tags["route"] != "GET /panic" || len(ev.Exception) == 0 {
			continue
		}
		found = true
		if ev.Tags["service"] != "orders" || len(ev.Tags["trace_id"]) != 32 {
			t.Errorf("the panic's event lacks the service or the trace id: %v", ev.Tags)
		}
		var inHandler bool
		for _, ex := range ev.Exception {
			if ex.Stacktrace == nil {
				continue
			}
			for _, f := range ex.Stacktrace.Frames {
				if f.Function == "panics" && f.Module == "main" {
					inHandler = true
				}
			}
		}
		if !inHandler {
			t.Errorf("the panic's event has no stack through the handler: %+v", ev.Exception)
		}
	}
	if !found {
		t.Errorf("no event for the handler panic among %+v", s.got())
	}
}
