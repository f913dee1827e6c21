package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/proctest"
	"github.com/servicewright/servicewright/internal/testenv"
)

// replica is one process behind HAProxy, restarted on the same ports.
type replica struct {
	name, bin   string
	http, probe string
	env         []string
	proc        *proctest.Proc
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	r.proc = proctest.Start(t, r.bin, append([]string{"HTTP_ADDR=" + r.http, "PROBE_ADDR=" + r.probe, "GRPC_ADDR=127.0.0.1:0"}, r.env...)...)
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

// load sends requests through addr at rate per second from workers keep-alive
// clients until stop closes; a third of them hold for 300 ms.
type load struct {
	ok, failed atomic.Int64
	took       time.Duration
	mu         sync.Mutex
	samples    []string
}

func (l *load) run(addr string, rate, workers int, stop <-chan struct{}) {
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
				default: // every worker busy: the generator is saturated, skip the tick
				}
			}
		}
	})
	tr := &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for range workers {
		wg.Go(func() {
			for n := range tokens {
				path := "/hello"
				if n%3 == 0 {
					path = "/slow?d=300ms"
				}
				l.do(client, "http://"+addr+path)
			}
		})
	}
	wg.Wait()
	tr.CloseIdleConnections()
}

func (l *load) do(c *http.Client, url string) {
	resp, err := c.Get(url)
	l.record(url, resp, err)
}

// record counts one answer: ok when it is a 2xx read whole, failed otherwise, with
// the first few failures kept.
func (l *load) record(url string, resp *http.Response, err error) {
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode/100 != 2 {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
	}
	if err == nil {
		l.ok.Add(1)
		return
	}
	l.failed.Add(1)
	l.mu.Lock()
	if len(l.samples) < 5 {
		l.samples = append(l.samples, url+": "+err.Error())
	}
	l.mu.Unlock()
}

// startPair starts two replicas of bin with env behind HAProxy checking /readyz
// every interval, and waits until HAProxy sees both up.
func startPair(t *testing.T, bin string, env []string, interval time.Duration, opts ...testenv.HAProxyOption) ([]*replica, *testenv.HAProxy) {
	t.Helper()
	var reps []*replica
	var backends []testenv.Backend
	for i := range 2 {
		r := &replica{name: fmt.Sprintf("r%d", i+1), bin: bin, http: freeAddr(t), probe: freeAddr(t), env: env}
		_, probePort, _ := net.SplitHostPort(r.probe)
		var port int
		fmt.Sscan(probePort, &port)
		reps = append(reps, r)
		backends = append(backends, testenv.Backend{Name: r.name, Addr: r.http, ProbePort: port})
	}
	for _, r := range reps {
		r.start(t)
	}
	lb, err := testenv.StartHAProxy(backends, interval, opts...)
	testenv.Require(t, err)
	t.Cleanup(func() { _ = lb.Stop() })
	for _, r := range reps {
		if err := lb.WaitStatus(r.name, "UP", 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return reps, lb
}

// rollingRestart runs two replicas behind HAProxy under load and restarts each of
// them three times in turn. It returns the load's counts.
func rollingRestart(t *testing.T, bin string, env []string, wantExit0 bool) *load {
	t.Helper()
	reps, lb := startPair(t, bin, env, 250*time.Millisecond)

	l := &load{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	rate, rounds := envInt("SW_ROLLING_RATE", 400), envInt("SW_ROLLING_ROUNDS", 3) // make bench runs it larger
	workers := max(64, rate/5)                                                     // a third of the requests hold 300 ms
	wg.Go(func() { l.run(lb.Addr(), rate, workers, stop) })
	defer func() { close(stop); wg.Wait() }()

	for round := range rounds {
		for _, r := range reps {
			_ = r.proc.Signal(syscall.SIGTERM)
			code, err := r.proc.Wait(30 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if wantExit0 && code != 0 {
				t.Fatalf("round %d: %s exited %d", round, r.name, code)
			}
			r.start(t)
			if err := lb.WaitStatus(r.name, "UP", 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{}) // for the deferred close
	return l
}

func TestRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("the rolling restart takes ~30s")
	}
	t.Run("servicewright behind HAProxy drops nothing", func(t *testing.T) {
		// The drain is under test, not overload protection: on a machine the whole
		// test suite loads, the limiter may rightly shed a request, which this test
		// would count as dropped (TestRolloutOverload tests the two together).
		l := rollingRestart(t, bin, []string{"SW_DRAIN_DELAY=1s", "SW_LOG_LEVEL=warn", "SW_ADMISSION_OFF=1"}, true)
		total := l.ok.Load() + l.failed.Load()
		rps := float64(total) / l.took.Seconds()
		t.Logf("servicewright: %d requests in %s (%.0f/s), %d failed %v", total, l.took.Round(time.Millisecond), rps, l.failed.Load(), l.samples)
		if l.failed.Load() != 0 {
			t.Errorf("%d of %d requests failed: %v", l.failed.Load(), total, l.samples)
		}
		if rps < 300 {
			t.Errorf("only %.0f requests/s: the load was too thin to prove anything", rps)
		}
	})
	t.Run("a naive net/http server behind the same HAProxy drops requests", func(t *testing.T) {
		l := rollingRestart(t, naiveBin, nil, false)
		total := l.ok.Load() + l.failed.Load()
		t.Logf("naive: %d requests, %d failed %v", total, l.failed.Load(), l.samples)
		if l.failed.Load() == 0 {
			t.Errorf("0 of %d failed: the test cannot tell a graceful drain from none", total)
		}
	})
}

func envInt(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err != nil || n <= 0 {
		return def
	}
	return n
}
