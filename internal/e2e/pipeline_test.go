package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With the example's DrainDelay of 0, 100 HTTP/1.1 requests pipelined on one
// connection, the first still being handled at SIGTERM: the client gets a complete
// answer to it and a clean end of the connection, and the shutdown report counts
// the 99 left unanswered.
func TestPipelinedRequestsAtSIGTERMAreReported(t *testing.T) {
	const total = 100
	httpAddr := freeAddr(t)
	p, probe := startExample(t, "HTTP_ADDR="+httpAddr)
	mustLog(t, p, stage("serve"), 20*time.Second)
	c, err := net.DialTimeout("tcp", httpAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	var reqs strings.Builder
	reqs.WriteString("GET /slow?d=1s HTTP/1.1\r\nHost: orders\r\n\r\n")
	for range total - 1 {
		reqs.WriteString("GET /hello HTTP/1.1\r\nHost: orders\r\n\r\n")
	}
	if _, err := io.WriteString(c, reqs.String()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(mustGet(t, "http://"+probe+"/debug/lifecycle").raw,
		`"name":"http","state":"serving","in_flight":1`); {
		if time.Now().After(deadline) {
			t.Fatal("the slow request never became in flight")
		}
	}
	_ = p.Signal(syscall.SIGTERM)

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
	if code := exitCode(t, p); code != 0 {
		t.Fatalf("exit %d", code)
	}
	rep := p.Find(map[string]string{"msg": "shutdown report"})
	want := fmt.Sprintf("pipelined_unanswered=%d", total-answered)
	if answered == total || rep == nil || !strings.Contains(fmt.Sprint(rep["drains"]), want) {
		t.Errorf("%d of %d answered; the report must count the rest (%s): %v", answered, total, want, rep["drains"])
	}
	t.Logf("%d answered, %s", answered, want)
}
