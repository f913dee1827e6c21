package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHeaderFlood: 150 connections each send a request with 60,000 small header
// fields (about 770 KB, under the 1 MiB MaxHeaderBytes). Each is answered 431 once
// it passes httpentry's MaxHeaderFields (100), before net/http has parsed the rest,
// and the process's peak RSS stays within 100 MB of what it was before (parsing
// them all takes hundreds of MB; make bench has the figure beside bare net/http).
func TestHeaderFlood(t *testing.T) {
	const conns, fields = 150, 60000
	httpAddr := freeAddr(t)
	p, _ := startExample(t, "HTTP_ADDR="+httpAddr)
	mustLog(t, p, map[string]string{"msg": "service ready"}, 30*time.Second)
	before := procStatusKB(t, p.Pid(), "VmRSS")

	var head strings.Builder
	head.WriteString("GET /hello HTTP/1.1\r\nHost: orders\r\n")
	for i := range fields {
		head.WriteString("X-H" + strconv.Itoa(i) + ": v\r\n")
	}
	head.WriteString("\r\n")
	req := []byte(head.String())

	var mu sync.Mutex
	answers := map[string]int{}
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			got := floodOnce(httpAddr, req)
			mu.Lock()
			answers[got]++
			mu.Unlock()
		})
	}
	wg.Wait()
	peak := procStatusKB(t, p.Pid(), "VmHWM")
	t.Logf("%d connections × %d fields (%d KB each): answers %v; RSS %d MB before, peak %d MB",
		conns, fields, len(req)/1000, answers, before/1000, peak/1000)
	if answers["431"] != conns {
		t.Errorf("answers %v, want %d× 431", answers, conns)
	}
	if peak-before > 100_000 {
		t.Errorf("peak RSS %d MB, %d MB over the %d MB before the flood; want at most 100 MB over",
			peak/1000, (peak-before)/1000, before/1000)
	}
}

// floodOnce sends req on a connection of its own, reading the answer while it
// writes, and returns the answer's status code, or what went wrong.
func floodOnce(addr string, req []byte) string {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	go c.Write(req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "no answer"
	}
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}

// procStatusKB reads a field of /proc/pid/status given in kB ("VmRSS", "VmHWM").
func procStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}
