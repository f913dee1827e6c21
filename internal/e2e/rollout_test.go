package e2e

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// burnRounds is the SHA-256 rounds of each /burn request of the rollout test: a
// few milliseconds of CPU, so that two single-CPU replicas saturate at a rate the
// generator sustains.
const burnRounds = 30000

// rolloutOutcome is one request of an open loop.
type rolloutOutcome struct {
	at, done   time.Time // scheduled instant, answer
	code       int
	retryAfter bool
	body       string // the start of a body that is not a 2xx's
	err        error
}

// openLoad sends GET url at rate per second, each at its scheduled instant whatever
// the answers' pace, until stop closes, and records every rolloutOutcome. A request that
// finds maxOut already outstanding is not sent and counted in skipped.
type openLoad struct {
	mu       sync.Mutex
	outs     []rolloutOutcome
	skipped  atomic.Int64
	maxOut   int
	client   *http.Client
	transpor *http.Transport
}

func newOpenLoad(maxOut int) *openLoad {
	tr := &http.Transport{MaxIdleConnsPerHost: maxOut, MaxConnsPerHost: maxOut}
	return &openLoad{maxOut: maxOut, transpor: tr, client: &http.Client{Transport: tr, Timeout: 5 * time.Second}}
}

func (o *openLoad) run(url string, rate float64, stop <-chan struct{}) {
	sem := make(chan struct{}, o.maxOut)
	interval := time.Duration(float64(time.Second) / rate)
	var wg sync.WaitGroup
	defer o.transpor.CloseIdleConnections()
	defer wg.Wait()
	start := time.Now()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		select {
		case <-stop:
			return
		case <-time.After(time.Until(at)): // the open loop's schedule, not synchronisation
		}
		select {
		case sem <- struct{}{}:
		default:
			o.skipped.Add(1)
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			out := rolloutOutcome{at: at}
			resp, err := o.client.Get(url)
			if err == nil {
				var b []byte
				b, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				out.code, out.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After") != ""
				if out.code/100 != 2 {
					out.body = string(b[:min(len(b), 120)])
				}
			}
			out.err, out.done = err, time.Now()
			o.mu.Lock()
			o.outs = append(o.outs, out)
			o.mu.Unlock()
		})
	}
}

// closedLoad returns how many 2xx per second workers clients, each sending GET url
// as soon as its last answer came, get over d.
func closedLoad(url string, workers int, d time.Duration) float64 {
	tr := &http.Transport{MaxIdleConnsPerHost: workers}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var ok atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(end) {
				resp, err := c.Get(url)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(ok.Load()) / d.Seconds()
}

// window is what the requests scheduled in one span of an open loop got.
type window struct {
	admitted           int // 2xx
	refused, refusedRA int // 503s, and those of them with Retry-After
	failed             int // anything else: errors, timeouts, other codes, a 503 without Retry-After
	firstFailure       string
	p99                time.Duration // of the admitted, from the scheduled instant
}

func summarise(outs []rolloutOutcome, from, to time.Time) window {
	var w window
	var lat []time.Duration
	for _, o := range outs {
		if o.at.Before(from) || !o.at.Before(to) {
			continue
		}
		switch {
		case o.err == nil && o.code/100 == 2:
			w.admitted++
			lat = append(lat, o.done.Sub(o.at))
			continue
		case o.err == nil && o.code == http.StatusServiceUnavailable:
			w.refused++
			if o.retryAfter {
				w.refusedRA++
				continue
			}
		}
		w.failed++
		if w.firstFailure == "" {
			w.firstFailure = fmt.Sprintf("status %d, Retry-After %v, error %v, %s after its instant, body %q", o.code, o.retryAfter, o.err, o.done.Sub(o.at).Round(time.Millisecond), o.body)
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		w.p99 = lat[len(lat)*99/100]
	}
	return w
}

// TestRolloutOverload restarts one of two replicas behind HAProxy while the pair is
// offered about 80 % of its capacity, so that the survivor is offered some 160 % of
// its own: what it admits must still succeed promptly, and what it refuses must say
// when to come back (issue 24, item 3). Each replica runs on one CPU (GOMAXPROCS=1)
// serving /burn, whose cost is CPU. The pair's capacity is measured first, in a
// closed loop through HAProxy.
func TestRolloutOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("the rollout under load takes ~20s")
	}
	// HAProxy checks every second, and a check answered later than that marks a
	// replica down: at 250 ms (the rolling-restart test's), the survivor, on one
	// CPU shared with neighbours, misses its check while it sheds and HAProxy, with
	// no replica left, answers 503 itself, without Retry-After. The drain delay
	// outlasts one check.
	env := []string{"GOMAXPROCS=1", "SW_DRAIN_DELAY=2s", "SW_LOG_LEVEL=warn"}
	reps, lb := startPair(t, bin, env, time.Second)
	url := fmt.Sprintf("http://%s/burn?n=%d", lb.Addr(), burnRounds)

	closedLoad(url, 8, 500*time.Millisecond) // warm up
	capacity := closedLoad(url, 8, 2*time.Second)
	if capacity < 50 {
		t.Fatalf("the pair serves only %.0f/s: too few to tell a queue from noise", capacity)
	}
	rate := 0.8 * capacity

	load := newOpenLoad(1024)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { load.run(url, rate, stop) })
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
			wg.Wait()
		}
	}()

	// Steady state: 1 s to settle, 4 s measured. The schedule, not the wait, is the
	// measurement, so these are timers over a running load, not synchronisation.
	began := time.Now()
	steadyFrom, steadyTo := began.Add(time.Second), began.Add(5*time.Second)
	time.Sleep(time.Until(steadyTo))

	r := reps[0]
	restartFrom := time.Now()
	_ = r.proc.Signal(syscall.SIGTERM)
	code, err := r.proc.Wait(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Errorf("%s exited %d", r.name, code)
	}
	r.start(t)
	if err := lb.WaitStatus(r.name, "UP", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	restartTo := time.Now().Add(time.Second) // and the second after it is back
	time.Sleep(time.Until(restartTo.Add(time.Second)))
	close(stop)
	wg.Wait()
	stopped = true

	steady := summarise(load.outs, steadyFrom, steadyTo)
	during := summarise(load.outs, restartFrom, restartTo)
	all := summarise(load.outs, began, restartTo.Add(time.Second))
	ratio := float64(during.p99) / float64(max(steady.p99, time.Millisecond))
	t.Logf("rollout: capacity %.0f/s, offered %.0f/s; steady p99 %s (%d admitted, %d refused); restart p99 %s (%.1f× steady) over %s (%d admitted, %d refused); refused %d with Retry-After, %d without; failed %d of %d; generator skipped %d",
		capacity, rate, steady.p99.Round(100*time.Microsecond), steady.admitted, steady.refused,
		during.p99.Round(100*time.Microsecond), ratio, restartTo.Sub(restartFrom).Round(time.Millisecond), during.admitted, during.refused,
		all.refusedRA, all.refused-all.refusedRA, all.failed, len(load.outs), load.skipped.Load())

	if all.failed != 0 {
		t.Errorf("%d of %d requests failed (neither 2xx nor a 503 with Retry-After); the first: %s", all.failed, len(load.outs), all.firstFailure)
	}
	if all.refused != all.refusedRA {
		t.Errorf("%d of %d refusals carry no Retry-After", all.refused-all.refusedRA, all.refused)
	}
	if n := load.skipped.Load(); n > int64(len(load.outs)/100) {
		t.Errorf("the generator skipped %d requests with 1024 outstanding: the load did not stay open", n)
	}
	if during.admitted < steady.admitted/4 {
		t.Errorf("only %d admitted during the restart against %d in the steady 4 s: the survivor refused what it could serve", during.admitted, steady.admitted)
	}
	// The goal is 3× steady, a figure `make bench` reports (internal/cmd/bench,
	// rollout.go, from this test's log line, without -race); on a shared machine a
	// neighbour's burst alone moves a p99 of a few milliseconds by more, so the test
	// holds a sanity bound ten times the goal.
	if ratio > 30 {
		t.Errorf("p99 of admitted during the restart %s is %.1f× the steady %s (sanity bound 30×, goal 3×)", during.p99, ratio, steady.p99)
	}
}
