package testenv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EtcdOption changes how StartEtcd starts the cluster.
type EtcdOption func(*Etcd)

// EtcdListen makes every member serve clients on addr too (a free port each),
// besides 127.0.0.1: for clients in a Netns. ListenEndpoints returns those URLs.
func EtcdListen(addr string) EtcdOption { return func(e *Etcd) { e.extra = addr } }

// Etcd is a cluster of etcd child processes on 127.0.0.1, each with its own data
// directory, short raft timings (heartbeat 50ms, election 500ms) so that a killed
// raft leader is replaced within a second. Its methods are safe for concurrent use.
type Etcd struct {
	bin   string
	dir   string
	extra string // an address clients may also reach the members on; "" for none

	mu      sync.Mutex
	members []*etcdMember
	stopped bool
}

type etcdMember struct {
	name                  string
	client, peer, outside int // ports; outside is 0 without EtcdListen
	proc                  *process
}

const etcdReadyTimeout = 30 * time.Second

// StartEtcd starts an n-member cluster (etcd from PATH, Debian's etcd-server) and
// returns once every member reports itself healthy, which needs a raft leader. When
// the binary is missing the error wraps ErrMissing.
func StartEtcd(n int, opts ...EtcdOption) (*Etcd, error) {
	e := &Etcd{}
	for _, o := range opts {
		o(e)
	}
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, missing("etcd", "etcd-server")
	}
	e.bin = bin
	// A port another process took between freePorts and the bind fails the start:
	// try again with new ports.
	for attempt := 0; ; attempt++ {
		c := &Etcd{bin: e.bin, extra: e.extra}
		err := c.startAll(n)
		if err == nil || attempt == 2 {
			return c, err
		}
	}
}

// startAll starts n members on fresh ports in a new directory.
func (e *Etcd) startAll(n int) error {
	var err error
	if e.dir, err = makeDir(etcdBase(), "testenv-etcd-*"); err != nil {
		return fmt.Errorf("testenv: etcd: %w", err)
	}
	per := 2
	if e.extra != "" {
		per = 3
	}
	ports, err := freePorts(n * per)
	if err != nil {
		_ = os.RemoveAll(e.dir)
		return err
	}
	var cluster []string
	for i := range n {
		m := &etcdMember{name: "m" + strconv.Itoa(i), client: ports[i*per], peer: ports[i*per+1]}
		if per == 3 {
			m.outside = ports[i*per+2]
		}
		e.members = append(e.members, m)
		cluster = append(cluster, fmt.Sprintf("%s=http://127.0.0.1:%d", m.name, m.peer))
	}
	for _, m := range e.members {
		if err := e.start(m, strings.Join(cluster, ",")); err != nil {
			_ = e.Stop()
			return err
		}
	}
	if err := e.waitHealthy(e.members, etcdReadyTimeout); err != nil {
		_ = e.Stop()
		return err
	}
	return nil
}

// etcdBase is where the clusters' directories go: in memory (/dev/shm) where there
// is one, since every etcd write waits for an fsync, which on a busy disk takes
// longer than the timings under test.
func etcdBase() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// freePorts returns n distinct loopback ports that were free a moment ago: each
// listener stays open until all are chosen, so none is chosen twice.
func freePorts(n int) ([]int, error) {
	var (
		ports []int
		ls    []net.Listener
	)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testenv: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// start runs member m. Called before e is shared or with e.mu held.
func (e *Etcd) start(m *etcdMember, cluster string) error {
	clients := fmt.Sprintf("http://127.0.0.1:%d", m.client)
	if m.outside != 0 {
		clients += fmt.Sprintf(",http://%s:%d", e.extra, m.outside)
	}
	args := []string{
		"--name", m.name,
		"--data-dir", filepath.Join(e.dir, m.name),
		"--listen-client-urls", clients,
		"--advertise-client-urls", fmt.Sprintf("http://127.0.0.1:%d", m.client),
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", m.peer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", m.peer),
		"--initial-cluster", cluster,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", filepath.Base(e.dir),
		"--heartbeat-interval", "50",
		"--election-timeout", "500",
		"--logger", "zap",
		"--log-level", "warn",
	}
	p, err := spawn(e.bin, args, filepath.Join(e.dir, m.name+".log"), nil)
	if err != nil {
		return fmt.Errorf("testenv: etcd %s: %w", m.name, err)
	}
	m.proc = p
	return nil
}

func (e *Etcd) waitHealthy(ms []*etcdMember, d time.Duration) error {
	deadline := time.Now().Add(d)
	hc := &http.Client{Timeout: time.Second}
	for _, m := range ms {
		for {
			if !m.proc.running() {
				return fmt.Errorf("testenv: etcd %s exited before it was healthy; output:\n%s", m.name, m.proc.logTail())
			}
			if healthy(hc, m.client) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("testenv: etcd %s not healthy within %v; output:\n%s", m.name, d, m.proc.logTail())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

func healthy(hc *http.Client, port int) bool {
	resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"health":"true"`)
}

// Endpoints returns every member's client URL on 127.0.0.1.
func (e *Etcd) Endpoints() []string {
	var out []string
	for _, m := range e.members {
		out = append(out, fmt.Sprintf("http://127.0.0.1:%d", m.client))
	}
	return out
}

// ListenEndpoints returns every member's client URL on the EtcdListen address.
func (e *Etcd) ListenEndpoints() []string {
	var out []string
	for _, m := range e.members {
		out = append(out, fmt.Sprintf("http://%s:%d", e.extra, m.outside))
	}
	return out
}

// Members returns the number of members.
func (e *Etcd) Members() int { return len(e.members) }

// Leader returns the index of the member that is the raft leader, asked of the
// members' metrics; -1 when none says so.
func (e *Etcd) Leader() int {
	hc := &http.Client{Timeout: time.Second}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, m := range e.members {
		if m.proc == nil || !m.proc.running() {
			continue
		}
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", m.client))
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "\netcd_server_is_leader 1") {
			return i
		}
	}
	return -1
}

// Kill ends member i with SIGKILL, as a crash would, and waits for it to exit.
func (e *Etcd) Kill(i int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.members[i]
	if m.proc == nil {
		return nil
	}
	if err := m.proc.kill(); err != nil {
		return fmt.Errorf("testenv: etcd %s: %w", m.name, err)
	}
	return nil
}

// Restart starts member i again on its data directory and ports, and returns once
// it is healthy (which needs a quorum). After Stop it returns ErrStopped.
func (e *Etcd) Restart(i int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return ErrStopped
	}
	m := e.members[i]
	if m.proc != nil && m.proc.running() {
		if err := m.proc.stop(syscall.SIGTERM, 5*time.Second); err != nil {
			return fmt.Errorf("testenv: etcd %s: %w", m.name, err)
		}
	}
	var cluster []string
	for _, o := range e.members {
		cluster = append(cluster, fmt.Sprintf("%s=http://127.0.0.1:%d", o.name, o.peer))
	}
	if err := e.start(m, strings.Join(cluster, ",")); err != nil {
		return err
	}
	return e.waitHealthy([]*etcdMember{m}, etcdReadyTimeout)
}

// Addr returns member i's client address, host:port on 127.0.0.1.
func (e *Etcd) Addr(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(e.members[i].client))
}

// Stop ends every member (SIGTERM, then SIGKILL after 5s), waits for them and
// removes the cluster's directory. It is idempotent.
func (e *Etcd) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil
	}
	e.stopped = true
	var errs []error
	for _, m := range e.members {
		if m.proc != nil {
			errs = append(errs, m.proc.stop(syscall.SIGTERM, 5*time.Second))
		}
	}
	errs = append(errs, os.RemoveAll(e.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testenv: etcd stop: %w", err)
	}
	return nil
}
