package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/testenv"
)

// load sends requests through addr at rate per second from workers keep-alive
// clients until stop closes; a third of them hold for 300 ms.
type load struct{ tally }

func (l *load) run(addr string, rate, workers int, stop <-chan struct{}) {
	tr := &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	l.openLoop(rate, workers, stop, func(n int) {
		path := "/hello"
		if n%3 == 0 {
			path = "/slow?d=300ms"
		}
		l.do(client, "http://"+addr+path)
	})
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
	l.fail(url + ": " + err.Error())
}

// startPair starts two replicas of bin with env behind HAProxy checking /readyz
// every interval, and waits until HAProxy sees both up.
func startPair(t *testing.T, bin string, env []string, interval time.Duration, opts ...testenv.HAProxyOption) ([]*replica, *testenv.HAProxy) {
	t.Helper()
	return startFleetBehind(t, 2, bin, env, fleetOptions{interval: interval, haproxy: opts})
}

// rollingRestart runs two replicas behind HAProxy under load and restarts each of
// them three times in turn. It returns the load's counts.
func rollingRestart(t *testing.T, bin string, env []string, wantExit0 bool) *load {
	t.Helper()
	reps, lb := startFleetBehind(t, 2, bin, env, fleetOptions{})

	l := &load{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	rate, rounds := envInt("SW_ROLLING_RATE", 400), envInt("SW_ROLLING_ROUNDS", 3) // make bench runs it larger
	workers := max(64, rate/5)                                                     // a third of the requests hold 300 ms
	wg.Go(func() { l.run(lb.Addr(), rate, workers, stop) })
	defer func() { close(stop); wg.Wait() }()

	roll(t, reps, lb, rounds, func(round int, r *replica, code int) {
		if wantExit0 && code != 0 {
			t.Fatalf("round %d: %s exited %d", round, r.name, code)
		}
	})
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
		l := rollingRestart(t, bin, []string{drainDelay, "SW_LOG_LEVEL=warn", "SW_ADMISSION_OFF=1"}, true)
		total := l.ok.Load() + l.failed.Load()
		rps := float64(total) / l.took.Seconds()
		t.Logf("servicewright: %d requests in %s (%.0f/s), %d failed %v", total, l.took.Round(time.Millisecond), rps, l.failed.Load(), l.samples)
		if l.failed.Load() != 0 {
			t.Errorf("%d of %d requests failed: %v", l.failed.Load(), total, l.samples)
		}
		// A sanity bound on the load, as a count rather than a rate (a loaded machine
		// slows the generator): at least 100 requests a restart.
		if restarts := int64(2 * envInt("SW_ROLLING_ROUNDS", 3)); total < 100*restarts {
			t.Errorf("only %d requests over %d restarts (%.0f/s): the load was too thin to prove anything", total, restarts, rps)
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
