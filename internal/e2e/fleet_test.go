package e2e

import (
	"cmp"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/proctest"
	"github.com/servicewright/servicewright/internal/testenv"
)

// The set-up the rolling-restart tests share: N replicas of a binary behind HAProxy,
// each ready before HAProxy starts, restarted in turn on the same ports while an
// open-loop load runs through HAProxy.

// checkEvery is how often HAProxy checks each replica's /readyz in the fleets here.
const checkEvery = 250 * time.Millisecond

// drainDelay is the SW_DRAIN_DELAY of a replica behind HAProxy checking every
// checkEvery: twice the longest HAProxy takes to notice a withdrawn readiness
// (testenv.NoticeWithin), so that no new request reaches a closed listener even when
// a check's answer is slow on a loaded machine.
var drainDelay = "SW_DRAIN_DELAY=" + (2 * testenv.NoticeWithin(checkEvery)).String()

// replica is one process behind HAProxy, restarted on the same ports.
type replica struct {
	name, bin string
	grpc      bool   // HAProxy balances its gRPC port (HTTP/2) rather than its HTTP port
	addr      string // the port HAProxy balances
	probe     string
	env       []string
	proc      *proctest.Proc
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	addrs := []string{"HTTP_ADDR=" + r.addr, "GRPC_ADDR=127.0.0.1:0"}
	if r.grpc {
		addrs = []string{"GRPC_ADDR=" + r.addr, "HTTP_ADDR=127.0.0.1:0"}
	}
	r.proc = proctest.Start(t, r.bin, append(append(addrs, "PROBE_ADDR="+r.probe), r.env...)...)
	waitReady(t, r.name, r.probe, r.proc)
}

// waitReady waits up to 20 s for the process p, serving probes on probe, to answer
// /readyz 200; it fails the test if p exits first.
func waitReady(t *testing.T, name, probe string, p *proctest.Proc) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if a, err := get(t, "http://"+probe+"/readyz"); err == nil && a.code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 20s", name)
		}
		select {
		case <-p.Done():
			t.Fatalf("%s exited at start", name)
		case <-time.After(5 * time.Millisecond): // polling another process's readiness
		}
	}
}

// fleetOptions are startFleetBehind's choices beyond the binary and its environment.
type fleetOptions struct {
	grpc     bool          // balance the gRPC port, HTTP/2 front and back
	interval time.Duration // HAProxy's check interval; checkEvery when 0
	haproxy  []testenv.HAProxyOption
}

// startFleetBehind starts n replicas of bin with env, then HAProxy in front of them
// checking /readyz, and waits until HAProxy sees every one up.
func startFleetBehind(t *testing.T, n int, bin string, env []string, o fleetOptions) ([]*replica, *testenv.HAProxy) {
	t.Helper()
	var reps []*replica
	var backends []testenv.Backend
	for i := range n {
		r := &replica{name: fmt.Sprintf("r%d", i+1), bin: bin, grpc: o.grpc, addr: freeAddr(t), probe: freeAddr(t), env: env}
		_, probePort, _ := net.SplitHostPort(r.probe)
		port, _ := strconv.Atoi(probePort)
		b := testenv.Backend{Name: r.name, Addr: r.addr, ProbePort: port}
		if o.grpc {
			b.Proto = "h2"
		}
		reps = append(reps, r)
		backends = append(backends, b)
	}
	for _, r := range reps {
		r.start(t)
	}
	lb, err := testenv.StartHAProxy(backends, cmp.Or(o.interval, checkEvery), o.haproxy...)
	testenv.Require(t, err)
	t.Cleanup(func() { _ = lb.Stop() })
	for _, r := range reps {
		if err := lb.WaitStatus(r.name, "UP", 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return reps, lb
}

// roll restarts each replica in turn, rounds times: SIGTERM, up to 30 s for the exit
// (then SIGKILL, as the kubelet at the end of its grace period), exited(round, r,
// code) with the old process, a start on the same ports, and HAProxy seeing it up.
func roll(t *testing.T, reps []*replica, lb *testenv.HAProxy, rounds int, exited func(round int, r *replica, code int)) {
	t.Helper()
	for round := range rounds {
		for _, r := range reps {
			_ = r.proc.Signal(syscall.SIGTERM)
			code, err := r.proc.Wait(30 * time.Second)
			if err != nil {
				_ = r.proc.Signal(syscall.SIGKILL)
				if code, err = r.proc.Wait(5 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if exited != nil {
				exited(round, r, code)
			}
			r.start(t)
			if err := lb.WaitStatus(r.name, "UP", 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// tally counts a load's answers and keeps its first few failures.
type tally struct {
	ok, failed atomic.Int64
	took       time.Duration
	mu         sync.Mutex
	samples    []string
}

func (l *tally) fail(msg string) {
	l.failed.Add(1)
	l.mu.Lock()
	if len(l.samples) < 5 {
		l.samples = append(l.samples, msg[:min(len(msg), 160)])
	}
	l.mu.Unlock()
}

// openLoop calls do(n) rate times per second from workers goroutines until stop
// closes, and sets l.took. A tick with every worker busy is skipped: the generator,
// not the service, is saturated.
func (l *tally) openLoop(rate, workers int, stop <-chan struct{}, do func(n int)) {
	began := time.Now()
	defer func() { l.took = time.Since(began) }()
	tokens := make(chan int, workers)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(tokens)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				select {
				case tokens <- n:
				default:
				}
			}
		}
	})
	for range workers {
		wg.Go(func() {
			for n := range tokens {
				do(n)
			}
		})
	}
	wg.Wait()
}
