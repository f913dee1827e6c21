package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/testenv"
)

// TestFrozenDependency freezes the fleet's shared Redis (SIGSTOP: connections stay
// open and nothing answers, the way a hung server or a partition looks) for 6 s under
// two replicas behind HAProxy with the documented configuration (inter 250 ms,
// timeout check 1000 ms, fall 1). Readiness answers from the checks' last results, so
// a probe never waits on Redis: every /readyz, sent every 200 ms with a 1 s client
// timeout as the kubelet's default, answers in a median under 250 ms (one that waited on Redis would take its 500 ms timeout;
// `make bench` has the figure), GET /hello is served throughout, HAProxy keeps every
// backend UP, and /readyz says "degraded" with the redis check "timed out". Each
// replica logs the failure once, not once per probe.
func TestFrozenDependency(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two replicas, HAProxy and a Redis of its own")
	}
	rds, err := testenv.StartRedis()
	testenv.Require(t, err)
	t.Cleanup(func() { _ = rds.Stop() })
	// The checks run every second, each under 500 ms: the freeze is seen within 1.5 s.
	reps, lb := startPair(t, bin, []string{"REDIS_URL=" + rds.URL(), "SW_CHECK_INTERVAL=1s", "SW_CHECK_TIMEOUT=500ms"}, 250*time.Millisecond)

	pid := redisServerPID(t, rds.Addr())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var (
		slowest   time.Duration
		tooks     []time.Duration
		probeErrs []string
		down      []string
		helloOK   int
		helloErrs []string
	)
	for _, r := range reps {
		wg.Go(func() { // the kubelet: a new connection per probe, every 200 ms (a 10 s timeout: see the median below)
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				began := time.Now()
				resp, err := c.Get("http://" + r.probe + "/readyz")
				took := time.Since(began)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				mu.Lock()
				slowest = max(slowest, took)
				tooks = append(tooks, took)
				if err != nil {
					probeErrs = append(probeErrs, fmt.Sprintf("%s: %v after %s", r.name, err, took))
				}
				mu.Unlock()
			}
		})
		wg.Go(func() { // HAProxy's view of the backend
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond): // sampling an external process's periodic check
				}
				st, err := lb.ServerStatus(r.name)
				if err != nil || !strings.HasPrefix(st, "UP") {
					mu.Lock()
					down = append(down, fmt.Sprintf("%s: %q %v", r.name, st, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Go(func() { // a client of a route that never touches Redis
		c := &http.Client{Timeout: 5 * time.Second}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			resp, err := c.Get("http://" + lb.Addr() + "/hello")
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			mu.Lock()
			if err != nil {
				helloErrs = append(helloErrs, err.Error())
			} else {
				helloOK++
			}
			mu.Unlock()
		}
	})

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)
	time.Sleep(3 * time.Second) // the freeze: past a check's run and its timeout
	during := mustGet(t, "http://"+reps[0].probe+"/readyz")
	time.Sleep(3 * time.Second) // the rest of the 6 s freeze
	thaw()
	close(stop)
	wg.Wait()

	t.Logf("slowest /readyz answer while Redis was frozen: %s; GET /hello: %d ok, %d failed", slowest, helloOK, len(helloErrs))
	if len(probeErrs) > 0 {
		t.Errorf("%d probes failed, e.g. %v", len(probeErrs), probeErrs[:min(5, len(probeErrs))])
	}
	// A probe that waited on Redis would take the check's 500 ms timeout, every one
	// of them: the median tells that apart from a loaded machine's stray slow answer.
	slices.Sort(tooks)
	if len(tooks) < 10 {
		t.Fatalf("%d probes answered in the 6 s freeze, want about 60", len(tooks))
	}
	if median := tooks[len(tooks)/2]; median > 250*time.Millisecond {
		t.Errorf("median /readyz answer %s while Redis was frozen (%d probes), want well under the 500 ms check timeout", median, len(tooks))
	}
	if len(down) > 0 {
		t.Errorf("HAProxy saw a backend not UP %d times, e.g. %v", len(down), down[:min(5, len(down))])
	}
	if len(helloErrs) > 0 || helloOK == 0 {
		t.Errorf("GET /hello: %d ok, %d failed, e.g. %v", helloOK, len(helloErrs), helloErrs[:min(5, len(helloErrs))])
	}
	if during.code != http.StatusOK || during.body["status"] != "degraded" || !strings.Contains(during.raw, `"redis":{"ok":false,"detail":"timed out after 500ms"`) {
		t.Errorf("/readyz during the freeze: %d %s, want 200 degraded, redis timed out", during.code, during.raw)
	}
	for _, r := range reps {
		n := 0
		for _, e := range r.proc.Entries() {
			if e["msg"] == "readiness check failed" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s logged %d \"readiness check failed\" lines for one outage, want 1", r.name, n)
		}
	}
	// Redis is back: the next run of the check says so.
	for _, r := range reps {
		deadline := time.Now().Add(20 * time.Second)
		for {
			a := mustGet(t, "http://"+r.probe+"/readyz")
			if a.body["status"] == "ok" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: /readyz still %s 20 s after the thaw", r.name, a.raw)
			}
			time.Sleep(100 * time.Millisecond) // polling another process's periodic check
		}
		_ = r.proc.Signal(syscall.SIGTERM)
		if code := exitCode(t, r.proc); code != 0 {
			t.Errorf("%s exit code %d, want 0", r.name, code)
		}
	}
}

// redisServerPID asks the Redis server at addr for its process id.
func redisServerPID(t *testing.T, addr string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_id:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("redis at %s did not say its process_id", addr)
	return 0
}

// readyzUntil polls /readyz on probe until its status is want, for at most within,
// and returns the last answer: the checks run in the background, every
// SW_CHECK_INTERVAL, so a dependency's change shows at the next run, not at once.
func readyzUntil(t *testing.T, probe, want string, within time.Duration) probeAnswer {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		a := mustGet(t, "http://"+probe+"/readyz")
		if a.body["status"] == want || time.Now().After(deadline) {
			return a
		}
		time.Sleep(50 * time.Millisecond) // polling another process's periodic check
	}
}
