package httpentry

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// 100 HTTP/1.1 requests pipelined on one connection, the fifth still being handled
// when Drain begins (DrainDelay 0): the client gets complete answers to the five, then
// a clean end of the connection (no reset), and the 95 left unanswered are counted
// in the drain report. Together they account for all 100.
func TestPipelinedRequestsAtTheDrainAreCounted(t *testing.T) {
	const total, before = 100, 4
	h := newHold()
	x := run(t, Config{}, h)
	c := dialRaw(t, x.s.Addr())
	var reqs strings.Builder
	for i := range total {
		path := "/ok"
		if i == before {
			path = "/hold"
		}
		reqs.WriteString("GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n")
	}
	if _, err := io.WriteString(c, reqs.String()); err != nil {
		t.Fatal(err)
	}
	recv(t, h.entered, "the fifth request's handler")

	x.endServe()
	drained := make(chan error, 1)
	go func() { drained <- x.drain(failAfter) }()
	recv(t, x.s.draining, "the drain to begin")
	close(h.release)
	if err := recv(t, drained, "Drain"); err != nil {
		t.Fatalf("Drain = %v", err)
	}

	answered := 0
	br := bufio.NewReader(c)
	for {
		if _, err := br.Peek(1); err != nil {
			if err != io.EOF {
				t.Errorf("after %d answers: %v, want a clean end of the connection", answered, err)
			}
			break
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil {
			t.Fatalf("answer %d: %v", answered+1, err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatalf("answer %d cut: %v", answered+1, err)
		}
		resp.Body.Close()
		answered++
	}
	if answered != before+1 {
		t.Errorf("%d answers, want %d (the drain closes after the answer in progress)", answered, before+1)
	}
	report := x.s.DrainReport()
	want := "pipelined_unanswered=" + strconv.Itoa(total-answered)
	if !strings.Contains(report, want) {
		t.Errorf("DrainReport = %q, want %q: %d requests answered, the rest must be counted", report, want, answered)
	}
}
