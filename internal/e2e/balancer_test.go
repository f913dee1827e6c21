package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/testenv"
)

// Behind a balancer of connections (kube-proxy's shape: HAProxy in mode tcp,
// checking /readyz, never moving an open connection), a pooled keep-alive client
// that sends POST /orders — which net/http's Transport never retries once written —
// loses nothing across rolling restarts: from the withdrawal of readiness each
// answer closes its connection, so the client's next request opens a new one
// through the balancer, to the replica still ready, while the draining one still
// serves.
//
// The race this guards against is timing-bound (a request written on a keep-alive
// connection in the instant the drain closes it), so the test runs several
// restarts under steady load: SW_BALANCER_ROUNDS (default 6, two restarts each) and
// SW_BALANCER_RATE (default 400 requests per second).
func TestRollingRestartBehindConnectionBalancer(t *testing.T) {
	if testing.Short() {
		t.Skip("the rolling restart takes ~30s")
	}
	// The drain is under test, not overload protection (see TestRollingRestart).
	env := []string{drainDelay, "SW_ADMISSION_OFF=1"}
	reps, lb := startFleetBehind(t, 2, bin, env, fleetOptions{haproxy: []testenv.HAProxyOption{testenv.HAProxyTCP()}})

	l := &load{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	rate, rounds := envInt("SW_BALANCER_RATE", 400), envInt("SW_BALANCER_ROUNDS", 6)
	wg.Go(func() { l.post(lb.Addr(), rate, 16, stop) })
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
			wg.Wait()
		}
	}()

	movedOff, restarts := 0, 0
	roll(t, reps, lb, rounds, func(round int, r *replica, code int) {
		if code != 0 {
			t.Fatalf("round %d: %s exited %d", round, r.name, code)
		}
		restarts++
		movedOff += movedOffIn(r.proc.Lines())
	})
	close(stop)
	wg.Wait()
	stopped = true

	total := l.ok.Load() + l.failed.Load()
	t.Logf("mode tcp: %d POST /orders in %s (%.0f/s) across %d restarts, %d failed %v; %d connections moved off",
		total, l.took.Round(time.Millisecond), float64(total)/l.took.Seconds(), restarts, l.failed.Load(), l.samples, movedOff)
	if l.failed.Load() != 0 {
		t.Errorf("%d of %d requests failed: %v", l.failed.Load(), total, l.samples)
	}
	if movedOff == 0 {
		t.Errorf("no connection moved off in %d restarts: the drain reports never said moved_off", restarts)
	}
	if total < int64(restarts)*100 {
		t.Errorf("only %d requests over %d restarts: the load was too thin to prove anything", total, restarts)
	}
}

// movedOffRE finds an entrypoint's count of connections moved off in the shutdown
// report (the HTTP and the gRPC entrypoints each give one).
var movedOffRE = regexp.MustCompile(`moved_off=(\d+)`)

// movedOffIn returns the sum of the moved_off figures of a process's shutdown
// report, 0 when there is none.
func movedOffIn(lines []string) int {
	sum := 0
	for _, line := range lines {
		if !strings.Contains(line, "shutdown report") {
			continue
		}
		for _, m := range movedOffRE.FindAllStringSubmatch(line, -1) {
			n, _ := strconv.Atoi(m[1])
			sum += n
		}
	}
	return sum
}

// post sends POST /orders through addr at rate per second from workers goroutines
// sharing one ordinary pooled client (keep-alive, no header of its own), until stop
// closes. Every order has an id of its own.
func (l *load) post(addr string, rate, workers int, stop <-chan struct{}) {
	tr := &http.Transport{MaxIdleConnsPerHost: workers}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	url := "http://" + addr + "/orders"
	run := time.Now().UnixNano()
	l.openLoop(rate, workers, stop, func(n int) {
		body := fmt.Sprintf(`{"id":"b%d-%d","item":"tea","qty":1}`, run, n)
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		l.record(url, resp, err)
	})
	tr.CloseIdleConnections()
}
