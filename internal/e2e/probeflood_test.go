package e2e

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestProbeFlood: under a descriptor limit of 1024 (prlimit), 1,100 clients hold
// connections to the probe port — 700 idle, 400 sending a header a byte at a time —
// and connect again a second after each is closed. The kubelet's probes (a new
// connection each, 1 s timeout) are still answered — never three failures of one
// in a row (the kubelet's default failureThreshold), at most a tenth lost (one evicted before its client could send: about
// 1,000 connections arrive each second) — the HTTP port still accepts, the
// probe listener never holds more than its cap, and SIGTERM exits 0. Before, the probe
// port had no cap and kept idle connections for 60 s: the probes timed out and the
// HTTP port refused new connections once the descriptors ran out.
func TestProbeFlood(t *testing.T) {
	const limit, idle, slow = 1024, 700, 400
	p, httpAddr, probe := startUnderNofile(t, limit, idle+slow)

	stop := make(chan struct{})
	var (
		wg       sync.WaitGroup
		connects atomic.Int64
	)
	defer func() { close(stop); wg.Wait() }()
	for i := range idle + slow {
		wg.Go(func() { floodClient(probe, i >= idle, stop, &connects) })
	}
	for connects.Load() < idle+slow { // every client connected once
		select {
		case <-p.Done():
			t.Fatal("the example exited under the flood")
		case <-time.After(10 * time.Millisecond):
		}
	}

	kubelet := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var answered, failed int
	var worst time.Duration
	inARow := map[string]int{}                       // failures in a row, by path
	period := time.NewTicker(250 * time.Millisecond) // probes spread over 5 s of flood, as a kubelet's period spreads them
	defer period.Stop()
	for range 20 {
		<-period.C
		for _, path := range []string{"/livez", "/readyz"} {
			began := time.Now()
			resp, err := kubelet.Get("http://" + probe + path)
			took := time.Since(began)
			if err != nil || resp.StatusCode != 200 {
				failed++
				inARow[path]++
				t.Logf("%s: %v %v after %s", path, resp, err, took)
			} else {
				answered++
				inARow[path] = 0
				worst = max(worst, took)
			}
			if resp != nil {
				resp.Body.Close()
			}
			// A kubelet restarts the pod after failureThreshold (3 by default)
			// failures of one probe in a row.
			if inARow[path] >= 3 {
				t.Errorf("%s failed three times in a row under the flood: a kubelet would restart the pod", path)
			}
		}
		resp, err := kubelet.Get("http://" + httpAddr + "/hello")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("the HTTP port under the probe flood: %v %v", resp, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// A connection evicted before its client could send its request is lost: with
	// clients reconnecting at about a thousand a second, that is rare, never the rule.
	if failed > (answered+failed)/10 {
		t.Errorf("%d of %d probes failed under the flood, want at most a tenth", failed, answered+failed)
	}
	_, metrics := getText(t, "http://"+probe+"/metrics")
	open, cap := metricValue(metrics, "servicewright_probe_connections_open"), metricValue(metrics, "servicewright_probe_connections_max")
	if cap != 64 || open > cap {
		t.Errorf("probe connections open %v, cap %v; want a cap of 64 at a limit of 1024, never exceeded", open, cap)
	}
	t.Logf("limit %d, %d idle + %d slow clients on the probe port (%d connections made): %d of %d probes answered, slowest %s; cap %v, evicted %v",
		limit, idle, slow, connects.Load(), answered, answered+failed, worst.Round(time.Millisecond), cap,
		metricValue(metrics, `servicewright_probe_connections_evicted_total{reason="idle"}`))

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, p); code != 0 {
		t.Fatalf("exit %d under the probe flood, want 0", code)
	}
}

// floodClient holds a connection to addr until stop: idle, or sending a request
// header a byte every 500 ms when slow; a second after the server closes it, it
// connects again.
func floodClient(addr string, slow bool, stop <-chan struct{}, connects *atomic.Int64) {
	for {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil {
			connects.Add(1)
			closed := make(chan struct{})
			go func() { _, _ = io.Copy(io.Discard, c); close(closed) }()
			hold(c, slow, stop, closed)
			c.Close()
			<-closed
		}
		select {
		case <-stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// hold keeps c open until the server closes it (closed) or stop.
func hold(c net.Conn, slow bool, stop, closed <-chan struct{}) {
	header := "GET /livez HTTP/1.1\r\nHost: probe\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-closed:
			return
		case <-tick.C:
			if slow && i < len(header) {
				_, _ = c.Write([]byte{header[i]})
			}
		}
	}
}
