package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The header flood: floodConns connections at once, each sending one request whose
// head carries floodFields small fields (about 770 KB, under the 1 MiB
// MaxHeaderBytes of both servers).
const (
	floodConns  = 150
	floodFields = 60000
)

// headerFloodFigure measures the peak RSS of an HTTP server under the header flood:
// httpentry (its MaxHeaderFields refuses each request with 431 once the limit is
// passed) beside bare net/http with the same MaxHeaderBytes, which parses every
// field into the request's map before any handler runs.
func headerFloodFigure(e env) ([]row, error) {
	svc, err := build(e.dir, "github.com/servicewright/servicewright/internal/cmd/httpbench")
	if err != nil {
		return nil, err
	}
	head := floodHead()
	runs := min(e.runs, 3)
	var entry, bare, entryIdle, bareIdle []float64
	var entryCodes, bareCodes string
	for range runs {
		idle, peak, codes, err := flood(svc, "entry", head)
		if err != nil {
			return nil, fmt.Errorf("httpentry: %w", err)
		}
		entryIdle, entry, entryCodes = append(entryIdle, idle), append(entry, peak), codes
		idle, peak, codes, err = flood(svc, "bare", head)
		if err != nil {
			return nil, fmt.Errorf("bare net/http: %w", err)
		}
		bareIdle, bare, bareCodes = append(bareIdle, idle), append(bare, peak), codes
	}
	m, b := median(entry), median(bare)
	return []row{{
		Figure: fmt.Sprintf("header flood: %d connections × %d small header fields (%d KB each, under MaxHeaderBytes): peak RSS",
			floodConns, floodFields, len(head)/1000),
		Target:   "≤ 100 MB",
		Measured: fmt.Sprintf("%.0f MB from %.0f MB idle (answers: %s)", m, median(entryIdle), entryCodes),
		Baseline: fmt.Sprintf("bare net/http %.0f MB from %.0f MB idle (answers: %s)", b, median(bareIdle), bareCodes),
		Verdict:  verdict(m <= 100),
	}}, nil
}

// floodHead is the flood's request.
func floodHead() string {
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: bench\r\n")
	for i := range floodFields {
		b.WriteString("X-H" + strconv.Itoa(i) + ": v\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// flood starts httpbench in mode, sends the flood and returns the server's RSS
// before it and its peak (VmHWM) after, in MB, and the answers by status.
func flood(bin, mode, head string) (idleMB, peakMB float64, codes string, err error) {
	addr, err := freeAddr()
	if err != nil {
		return 0, 0, "", err
	}
	cmd := exec.Command(bin, "-mode", mode, "-addr", addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, "", err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := awaitListening(addr); err != nil {
		return 0, 0, "", err
	}
	idle, err := procStatusMB(cmd.Process.Pid, "VmRSS")
	if err != nil {
		return 0, 0, "", err
	}
	var mu sync.Mutex
	count := map[string]int{}
	var wg sync.WaitGroup
	for range floodConns {
		wg.Go(func() {
			code := floodOne(addr, head)
			mu.Lock()
			count[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	peak, err := procStatusMB(cmd.Process.Pid, "VmHWM")
	if err != nil {
		return 0, 0, "", err
	}
	var parts []string
	for code, n := range count {
		parts = append(parts, fmt.Sprintf("%d× %s", n, code))
	}
	return idle, peak, strings.Join(parts, ", "), nil
}

// floodOne sends head on a connection of its own, reading the answer as it writes,
// and returns the answer's status code ("reset" or the like when there is none).
func floodOne(addr, head string) string {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "dial error"
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	go func() { _, _ = c.Write([]byte(head)) }()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "no answer"
	}
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}

// awaitListening dials addr until it accepts, for at most 10 s.
func awaitListening(addr string) error {
	for began := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			return c.Close()
		}
		if time.Since(began) > 10*time.Second {
			return fmt.Errorf("%s not listening after 10s: %w", addr, err)
		}
	}
}

// procStatusMB reads a field of /proc/pid/status given in kB ("VmRSS", "VmHWM"),
// in MB.
func procStatusMB(pid int, field string) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1000, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}
