package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestNoStarvationProcess: the consumer holds an order longer than the drain grace
// (EXAMPLE_HANDLE_DELAY > SW_DRAIN_GRACE) when SIGTERM comes. While it drains, (a) a
// request in flight at the drain that fits the grace gets its 200, and (b) every
// request sent during the drain gets a complete response or a refused connection,
// never an empty or cut reply. With drains run one after another, the consumer's
// drain would use the whole window while the HTTP server kept accepting, and the
// server's own turn would then cut what it had accepted meanwhile.
func TestNoStarvationProcess(t *testing.T) {
	httpAddr := freeAddr(t)
	p, probe := startExample(t, "HTTP_ADDR="+httpAddr, "EXAMPLE_HANDLE_DELAY=20s",
		"SW_DRAIN_GRACE=3s", "SW_DRAIN_DELAY=200ms", "EXAMPLE_LEADER_TTL=3s")
	mustLog(t, p, map[string]string{"msg": "partitions assigned"}, 20*time.Second)
	resp, err := http.Post("http://"+httpAddr+"/orders", "application/json", bytes.NewBufferString(`{"id":"s1","item":"tea","qty":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /orders: %d, want 202", resp.StatusCode)
	}
	waitInFlight(t, probe, "orders-consumer", 1)

	// (a) In flight at the drain, and fits the grace.
	inflight := make(chan error, 1)
	go func() { inflight <- fetch(newClient(), "http://"+httpAddr+"/slow?d=1500ms").err() }()
	waitInFlight(t, probe, "http", 1)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	mustLog(t, p, map[string]string{"msg": "draining", "entrypoint": "orders-consumer"}, 5*time.Second)

	// (b) A request every 100 ms from the consumer's drain until the process is gone,
	// each on a new connection and each held 300 ms by the server. They begin once the
	// drain has: a connection arriving at the very instant the HTTP listener closes
	// can be reset by the kernel, a race of the listener's close, not a starvation.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []outcome
	)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
sending:
	for {
		select {
		case <-p.Done():
			break sending
		case <-tick.C:
			wg.Go(func() {
				sent := time.Since(signalled)
				o := fetch(newClient(), "http://"+httpAddr+"/slow?d=300ms")
				o.sent = sent
				mu.Lock()
				results = append(results, o)
				mu.Unlock()
			})
		}
	}
	wg.Wait()

	if err := <-inflight; err != nil {
		t.Errorf("(a) the request in flight at the drain: %v; want its 200", err)
	}
	var answered, refused int
	for _, o := range results {
		switch {
		case o.refused:
			refused++
		case o.cut != nil:
			t.Errorf("(b) a request sent %s after SIGTERM was cut: %v", o.sent, o.cut)
		default:
			answered++
		}
	}
	t.Logf("during the drain: %d answered, %d refused", answered, refused)
	if answered+refused < 20 {
		t.Errorf("only %d requests during a drain of about 3s", answered+refused)
	}
	d := p.Find(map[string]string{"entrypoint": "orders-consumer", "in_flight_at_start": "1"})
	if d == nil || fmt.Sprint(d["in_flight_at_start"]) != "1" {
		t.Errorf("consumer drain log %v, want the order in hand at its start", d)
	}
}

// outcome is what a client saw: an answer, a refused connection, or a cut (an error
// once the connection was open: an empty reply, a reset, a body cut short).
type outcome struct {
	refused bool
	cut     error
	sent    time.Duration // after the signal
}

func (o outcome) err() error {
	switch {
	case o.refused:
		return errors.New("connection refused")
	default:
		return o.cut
	}
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
}

// fetch GETs url and sorts the result: a complete 200 (or 503 with Retry-After), a
// refused connection, or a cut.
func fetch(c *http.Client, url string) outcome {
	resp, err := c.Get(url)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return outcome{refused: true}
		}
		return outcome{cut: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return outcome{cut: fmt.Errorf("%s, body cut: %w", resp.Status, err)}
	case resp.StatusCode == http.StatusOK && bytes.HasPrefix(body, []byte("slept ")):
		return outcome{}
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		return outcome{}
	}
	return outcome{cut: fmt.Errorf("%s %q", resp.Status, body)}
}

// waitInFlight waits until /debug/lifecycle shows at least n in flight at entrypoint name.
func waitInFlight(t *testing.T, probe, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + probe + "/debug/lifecycle")
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Entrypoints []struct {
				Name     string
				InFlight int `json:"in_flight"`
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&l)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range l.Entrypoints {
			if e.Name == name && e.InFlight >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never had %d in flight", name, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
