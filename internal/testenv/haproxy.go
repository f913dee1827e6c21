package testenv

import (
	"encoding/csv"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Backend is one server behind HAProxy: where it serves traffic, and where HAProxy
// health-checks it (GET /readyz, expecting 200).
type Backend struct {
	Name      string
	Addr      string // host:port for traffic
	ProbePort int    // port of the /readyz check
	// Proto is "h2" for a backend that speaks cleartext HTTP/2 (a gRPC server), ""
	// for HTTP/1.1. When every backend is "h2", the frontend speaks HTTP/2 too
	// (prior knowledge, as a gRPC client without TLS does).
	Proto string
}

// HAProxy is a real haproxy process load-balancing Backends round-robin. It is
// configured like kube-proxy in front of a Service: no retries and no redispatch, so
// a request sent to a replica that refuses or resets it fails — the failures a
// graceful drain exists to prevent stay visible.
type HAProxy struct {
	cmd   *exec.Cmd
	dir   string
	addr  string
	stats string // address of the CSV stats page
	done  chan struct{}
}

// An HAProxyOption changes the configuration StartHAProxy runs.
type HAProxyOption func(*haproxyOptions)

type haproxyOptions struct {
	tcp bool
}

// HAProxyTCP balances connections rather than requests (mode tcp), as kube-proxy
// does in front of a Service: a new connection goes to a backend whose /readyz
// check passes, and an open one is never moved, whatever its backend's readiness.
// The checks are the same HTTP GET /readyz.
func HAProxyTCP() HAProxyOption { return func(o *haproxyOptions) { o.tcp = true } }

// StartHAProxy starts haproxy on a free loopback port in front of backends, checking
// each backend's /readyz every interval, marking it down after one failure.
func StartHAProxy(backends []Backend, interval time.Duration, opts ...HAProxyOption) (*HAProxy, error) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		return nil, fmt.Errorf("%w: haproxy (apt-get install haproxy)", ErrMissing)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	statsPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sw-haproxy-")
	if err != nil {
		return nil, err
	}
	cfg := HAProxyConfig(backends, interval, port, statsPort, opts...)
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	h := &HAProxy{dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port),
		stats: fmt.Sprintf("127.0.0.1:%d", statsPort), done: make(chan struct{})}
	h.cmd = exec.Command(bin, "-db", "-f", path)
	h.cmd.Stdout, h.cmd.Stderr = os.Stderr, os.Stderr
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := h.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", h.addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return h, nil
		}
		select {
		case <-h.done:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("haproxy exited at start (config %s)", path)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = h.Stop()
			return nil, fmt.Errorf("haproxy not listening on %s after 10s", h.addr)
		}
	}
}

// HAProxyConfig is the configuration StartHAProxy runs: a frontend on 127.0.0.1:port
// balancing backends round-robin, each health-checked with GET /readyz every interval
// and marked down after one failure (a check waits checkTimeout for its answer), no
// retries and no redispatch, and a CSV stats
// page on 127.0.0.1:statsPort. docs/operations.md shows it for a local fleet; a test
// holds the two equal. With HAProxyTCP the frontend and backend balance connections
// (mode tcp).
func HAProxyConfig(backends []Backend, interval time.Duration, port, statsPort int, opts ...HAProxyOption) string {
	var o haproxyOptions
	for _, opt := range opts {
		opt(&o)
	}
	var servers strings.Builder
	bind := " proto h2"
	if o.tcp {
		bind = "\n  mode tcp"
	}
	for _, b := range backends {
		proto := ""
		if b.Proto != "" {
			proto = " proto " + b.Proto + " check-proto h1" // /readyz is HTTP/1.1
		}
		if b.Proto != "h2" && !o.tcp {
			bind = ""
		}
		fmt.Fprintf(&servers, "  server %s %s check port %d%s\n", b.Name, b.Addr, b.ProbePort, proto)
	}
	beMode := ""
	if o.tcp {
		beMode = "\n  mode tcp"
	}
	ms := interval.Milliseconds()
	return fmt.Sprintf(`global
  maxconn 4096
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout http-keep-alive 30s
  retries 0
  no option redispatch
listen stats
  bind 127.0.0.1:%d
  stats enable
  stats uri /stats
frontend fe
  bind 127.0.0.1:%d%s
  default_backend be
backend be%s
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  timeout check %dms
  default-server inter %dms fastinter %dms downinter %dms fall 1 rise 1
%s`, statsPort, port, bind, beMode, checkTimeout(interval).Milliseconds(), ms, ms, ms, servers.String())
}

// checkTimeout is how long a health check may wait for /readyz's answer: three
// intervals, at least a second. A replica takes itself out by answering 503, at once
// (fall 1 acts on that answer); a slow answer is a busy machine, and Kubernetes's
// readiness probe tolerates it too (timeoutSeconds 1, failureThreshold 3).
func checkTimeout(interval time.Duration) time.Duration { return max(time.Second, 3*interval) }

// NoticeWithin is the longest HAProxy checking every interval takes to stop sending
// new requests to a replica that withdrew its readiness: the next check starts
// within an interval and may wait its whole timeout for the 503 on a loaded
// machine. A replica's drain delay (SW_DRAIN_DELAY) shorter than this lets HAProxy
// route to a closed listener, which it answers 503 (it has no retries).
func NoticeWithin(interval time.Duration) time.Duration { return interval + checkTimeout(interval) }

// Addr is the frontend's address.
func (h *HAProxy) Addr() string { return h.addr }

// ServerStatus returns HAProxy's view of a backend server: "UP", "DOWN", "MAINT", …
func (h *HAProxy) ServerStatus(name string) (string, error) {
	resp, err := http.Get("http://" + h.stats + "/stats;csv")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || len(rows) == 0 {
		return "", fmt.Errorf("haproxy stats: %v", err)
	}
	col := slices.Index(rows[0], "status")
	for _, r := range rows[1:] {
		if len(r) > col && col >= 0 && r[0] == "be" && r[1] == name {
			return r[col], nil
		}
	}
	return "", fmt.Errorf("haproxy stats: no server %q", name)
}

// WaitStatus waits until HAProxy reports server name with a status starting with
// want ("UP", "DOWN"), or until timeout.
func (h *HAProxy) WaitStatus(name, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		st, err := h.ServerStatus(name)
		if err == nil && strings.HasPrefix(st, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy: server %s is %q (%v), not %s after %s", name, st, err, want, timeout)
		}
		time.Sleep(10 * time.Millisecond) // polling an external process's periodic check
	}
}

// Stop kills haproxy, waits for it and removes its directory. It is idempotent.
func (h *HAProxy) Stop() error {
	if h.cmd.Process != nil {
		_ = h.cmd.Process.Kill()
	}
	<-h.done
	return os.RemoveAll(h.dir)
}
