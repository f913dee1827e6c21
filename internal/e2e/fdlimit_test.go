package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/proctest"
	"github.com/servicewright/servicewright/internal/transport"
)

// TestDescriptorLimit: under a descriptor limit of 1024 (prlimit), 1,100 idle
// keep-alive clients on the HTTP port leave /livez and /readyz answering within 1 s —
// the HTTP listener stops accepting at its cap (384 at 1024) and the rest wait in the
// backlog — and SIGTERM still exits 0, with the drain report saying what the cap held.
func TestDescriptorLimit(t *testing.T) {
	const limit, clients = 1024, 1100
	p, httpAddr, probe := startUnderNofile(t, limit, clients)
	if got := nofileOf(t, p.Pid()); got != limit {
		t.Fatalf("the example's descriptor limit is %d, want %d", got, limit)
	}

	// 1,100 clients, each sending one request and keeping its connection open.
	conns := make([]net.Conn, 0, clients)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range clients {
		c, err := net.DialTimeout("tcp", httpAddr, 5*time.Second)
		if err != nil {
			t.Fatalf("client %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET /hello HTTP/1.1\r\nHost: orders\r\n\r\n"); err != nil {
			t.Fatalf("client %d: %v", len(conns), err)
		}
	}
	mustLog(t, p, map[string]string{"msg": "connection cap reached: not accepting until a connection closes; new ones wait in the listen backlog",
		"entrypoint": "http"}, 10*time.Second)

	// The probes must answer, not hang or be refused: a 10 s sanity bound (they take
	// milliseconds; the kubelet's 1 s timeout is a figure for make bench, not for a
	// loaded test machine).
	probeClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var worst time.Duration
	for range 5 {
		for _, path := range []string{"/livez", "/readyz"} {
			began := time.Now()
			resp, err := probeClient.Get("http://" + probe + path)
			took := time.Since(began)
			if err != nil {
				t.Fatalf("%s with %d clients connected: %v after %s", path, clients, err, took)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("%s = %d after %s, want 200", path, resp.StatusCode, took)
			}
			worst = max(worst, took)
		}
	}
	_, metrics := getText(t, "http://"+probe+"/metrics")
	open, cap := metricValue(metrics, "servicewright_http_connections_open"), metricValue(metrics, "servicewright_http_connections_max")
	if cap != 384 || open > cap {
		t.Errorf("connections open %v, cap %v; want a cap of 384 at a limit of 1024, never exceeded", open, cap)
	}
	t.Logf("limit %d, %d idle clients: cap %v, open %v, accept paused %v times; slowest /livez or /readyz %s",
		limit, clients, cap, open, metricValue(metrics, "servicewright_http_accept_paused_total"), worst)

	began := time.Now()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, p); code != 0 {
		t.Fatalf("exit %d with %d clients connected, want 0", code, clients)
	}
	rep := p.Find(map[string]string{"msg": "shutdown report"})
	if rep == nil || rep["result"] != "success" {
		t.Fatalf("shutdown report %v, want success", rep)
	}
	detail := drainDetail(rep, "http")
	if !strings.Contains(detail, "conns_max=384 conns_peak=384 accept_paused=") {
		t.Errorf("http drain detail %q, want what the cap held back", detail)
	}
	t.Logf("SIGTERM to exit: %s; http drain: %s", time.Since(began).Round(time.Millisecond), detail)
}

// raiseNofile raises this process's soft descriptor limit to at least n.
func raiseNofile(t *testing.T, n uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur >= n {
		return
	}
	if rl.Max < n {
		t.Fatalf("the hard descriptor limit %d is below the %d this test needs", rl.Max, n)
	}
	rl.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
}

// nofileOf reads the soft descriptor limit of process pid.
func nofileOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 5 && f[0] == "Max" && f[1] == "open" && f[2] == "files" {
			var n int
			fmt.Sscan(f[3], &n)
			return n
		}
	}
	t.Fatal("no open-files line in /proc/pid/limits")
	return 0
}

// metricValue is the value of the first series of name in a /metrics page, or -1.
func metricValue(page, name string) float64 {
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			var v float64
			if _, err := fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v); err == nil {
				return v
			}
		}
	}
	return -1
}

// drainDetail is the detail of entrypoint name in a shutdown report's drains.
func drainDetail(rep map[string]any, name string) string {
	drains, _ := rep["drains"].([]any)
	i := slices.IndexFunc(drains, func(d any) bool { m, _ := d.(map[string]any); return m["entrypoint"] == name })
	if i < 0 {
		return ""
	}
	return fmt.Sprint(drains[i].(map[string]any)["detail"])
}

// TestMaxConnsEnv: HTTP_MAX_CONNS sets httpentry.Config.MaxConns; 0 takes the
// default from the descriptor limit, and a negative or malformed value exits 78
// naming the variable and the field it sets, beside every other problem.
func TestMaxConnsEnv(t *testing.T) {
	for _, v := range []string{"-1", "lots"} {
		t.Run("HTTP_MAX_CONNS="+v+": exit 78 naming it", func(t *testing.T) {
			p, _ := startExample(t, "HTTP_MAX_CONNS="+v, "EXAMPLE_CRON_EVERY=1ns")
			if code := exitCode(t, p); code != 78 {
				t.Fatalf("exit %d, want 78", code)
			}
			out := strings.Join(p.Lines(), "\n")
			for _, want := range []string{"HTTP_MAX_CONNS", "httpentry.Config.MaxConns", "EXAMPLE_CRON_EVERY"} {
				if !strings.Contains(out, want) {
					t.Errorf("the error does not name %s:\n%s", want, out)
				}
			}
		})
	}
	t.Run("zero takes the default; a value is the cap", func(t *testing.T) {
		// The example's limit is this process's: Go raises the soft limit to the hard
		// one at start, in both.
		def := float64(transport.DefaultMaxConns())
		for env, want := range map[string]float64{"HTTP_MAX_CONNS=0": def, "HTTP_MAX_CONNS=50": 50} {
			p, probe := startExample(t, env)
			mustLog(t, p, map[string]string{"msg": "service ready"}, 20*time.Second)
			_, metrics := getText(t, "http://"+probe+"/metrics")
			if got := metricValue(metrics, "servicewright_http_connections_max"); got != want {
				t.Errorf("%s: servicewright_http_connections_max = %v, want %v", env, got, want)
			}
			_ = p.Signal(syscall.SIGTERM)
			if code := exitCode(t, p); code != 0 {
				t.Errorf("%s: exit %d", env, code)
			}
		}
	})
}

// startUnderNofile starts the example under a descriptor limit of limit (prlimit sets
// it, then execs the binary in place), with a drain delay of 200ms and env, after
// raising this process's own limit so that it can hold clients connections, and
// waits until it is ready. It returns the process and its HTTP and probe addresses.
// Without prlimit the test is skipped, and fails under CI=true.
func startUnderNofile(t *testing.T, limit, clients int, env ...string) (p *proctest.Proc, httpAddr, probe string) {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prlimit (util-linux) is missing")
		}
		t.Skip("prlimit (util-linux) is missing")
	}
	raiseNofile(t, uint64(clients+512)) // this process holds every client's descriptor
	httpAddr, probe = freeAddr(t), freeAddr(t)
	env = append([]string{"PROBE_ADDR=" + probe, "HTTP_ADDR=" + httpAddr, "GRPC_ADDR=127.0.0.1:0", "SW_DRAIN_DELAY=200ms"}, env...)
	p = proctest.StartArgs(t, []string{prlimit, fmt.Sprintf("--nofile=%d:%d", limit, limit), "--", bin}, env...)
	mustLog(t, p, map[string]string{"msg": "service ready"}, 30*time.Second)
	return p, httpAddr, probe
}
