package httpentry

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// readAnswer reads one response from br and its body.
func readAnswer(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	resp.Body.Close()
	return resp, string(b)
}

// TestHeaderFieldLimit: a request with MaxHeaderFields fields is served; one with a
// field more is answered 431 with Connection: close, before the handler, and the
// connection then ends cleanly (a FIN, not a reset). Pipelined behind a request
// that is served, or after a bare-LF head, it is refused all the same.
func TestHeaderFieldLimit(t *testing.T) {
	const limit = 10
	var served atomic.Int32
	x := run(t, Config{MaxHeaderFields: limit}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.WriteString(w, "ok")
	}))

	c := dialRaw(t, x.s.Addr())
	if resp, body := c.do("GET", "/", "", headFields(limit-1)); resp.StatusCode != http.StatusOK { // Host is the tenth
		t.Fatalf("%d fields: %d %q, want 200", limit, resp.StatusCode, body)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: test\r\n"+headFields(limit)+"\r\n")
	resp, body := readAnswer(t, c.br)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !resp.Close ||
		!strings.Contains(body, `"code":"too_many_header_fields"`) {
		t.Errorf("%d fields: %d close=%v %q, want 431, Connection: close and the JSON body", limit+1, resp.StatusCode, resp.Close, body)
	}
	if rest, err := c.readToEOF(); err != nil || rest != "" {
		t.Errorf("after the 431: %q, %v; want a clean end of the connection", rest, err)
	}

	for _, pipelined := range []string{
		"GET / HTTP/1.1\r\nHost: test\r\n\r\nGET / HTTP/1.1\r\nHost: test\r\n" + headFields(limit) + "\r\n",
		"GET / HTTP/1.1\nHost: test\n\nGET / HTTP/1.1\nHost: test\n" + strings.ReplaceAll(headFields(limit), "\r\n", "\n") + "\n",
	} {
		c := dialRaw(t, x.s.Addr())
		io.WriteString(c, pipelined)
		if resp, body := readAnswer(t, c.br); resp.StatusCode != http.StatusOK {
			t.Errorf("first pipelined request: %d %q, want 200", resp.StatusCode, body)
		}
		if resp, body := readAnswer(t, c.br); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("second pipelined request, %d fields: %d %q, want 431", limit+1, resp.StatusCode, body)
		}
		if rest, err := c.readToEOF(); err != nil || rest != "" {
			t.Errorf("after the 431: %q, %v; want a clean end of the connection", rest, err)
		}
	}
	if served := served.Load(); served != 3 {
		t.Errorf("the handler ran %d times, want 3 (never for a refused head)", served)
	}
	if got := x.s.Stats().RefusedHeaderFields; got != 3 {
		t.Errorf("Stats().RefusedHeaderFields = %d, want 3", got)
	}
}

// TestContentLengthWithTransferEncoding: a request carrying both is answered 400
// with Connection: close, before the handler, and its connection is closed (RFC 9112
// §6.3), whatever the case of the names; net/http alone would serve it and keep the
// connection open. Either one alone is served on a kept-alive connection.
func TestContentLengthWithTransferEncoding(t *testing.T) {
	var served atomic.Int32
	x := run(t, Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	c := dialRaw(t, x.s.Addr())
	if resp, _ := c.do("POST", "/", "abc"); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("Content-Length alone: %d close=%v, want 200 kept alive", resp.StatusCode, resp.Close)
	}
	if resp, _ := c.do("POST", "/", "", "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("Transfer-Encoding alone: %d close=%v, want 200 kept alive", resp.StatusCode, resp.Close)
	}
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: test\r\ncontent-length: 3\r\nTRANSFER-ENCODING: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	resp, body := readAnswer(t, c.br)
	if resp.StatusCode != http.StatusBadRequest || !resp.Close || !strings.Contains(body, `"code":"ambiguous_length"`) {
		t.Errorf("both: %d close=%v %q, want 400, Connection: close and the JSON body", resp.StatusCode, resp.Close, body)
	}
	if rest, err := c.readToEOF(); err != nil || rest != "" {
		t.Errorf("after the 400: %q, %v; want a clean end of the connection", rest, err)
	}
	if served := served.Load(); served != 2 {
		t.Errorf("the handler ran %d times, want 2", served)
	}
	if got := x.s.Stats().RefusedFraming; got != 1 {
		t.Errorf("Stats().RefusedFraming = %d, want 1", got)
	}
}

// TestHeaderFlood: a client sending 60,000 small fields (about 770 KB, under
// MaxHeaderBytes) gets its 431 once the limit is passed, while still sending:
// the connection lingers so that the answer arrives rather than a reset.
func TestHeaderFlood(t *testing.T) {
	x := run(t, Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	c := dialRaw(t, x.s.Addr())
	sent := make(chan error, 1)
	go func() {
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: test\r\n"+headFields(60000)+"\r\n")
		sent <- err
	}()
	resp, _ := readAnswer(t, c.br)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("flood: %d, want 431", resp.StatusCode)
	}
	if _, err := c.readToEOF(); err != nil {
		t.Errorf("after the 431: %v, want a clean end of the connection", err)
	}
	c.Close()
	<-sent
}

// TestMaxHeaderFieldsNegative: a negative limit is a ConfigError naming it.
func TestMaxHeaderFieldsNegative(t *testing.T) {
	_, err := New(Config{MaxHeaderFields: -1}, http.NotFoundHandler())
	if err == nil || !strings.Contains(err.Error(), "MaxHeaderFields") {
		t.Fatalf("New = %v, want a ConfigError naming MaxHeaderFields", err)
	}
}
