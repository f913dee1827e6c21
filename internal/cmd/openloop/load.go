package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// result is what one open-loop level measured.
type result struct {
	goodput       float64       // 2xx within deadline, per second
	p99, p99Send  time.Duration // of the 2xx: from the scheduled instant, from the send
	refused, fail int
	ran           time.Duration // the server's threads ran, over the measured span
	dials         int64         // connections the generator opened in the measured span
}

// deadline is how late a 2xx may be and still count as goodput.
const deadline = time.Second

// newTransport is a vegeta-like client: keep-alive connections without a bound,
// as many idle ones kept as the load made.
func newTransport() *http.Transport {
	return &http.Transport{MaxIdleConns: 0, MaxIdleConnsPerHost: 10000, MaxConnsPerHost: 0,
		IdleConnTimeout: 30 * time.Second, DisableCompression: true}
}

// countDials makes tr count the connections it opens in *n.
func countDials(tr *http.Transport, n *atomic.Int64) {
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return d.DialContext(ctx, network, addr)
	}
}

// openLoop sends rate requests per second to addr, served by process pid, for
// warm+measure, each from a goroutine of its own at its scheduled instant, and
// measures the requests scheduled during measure.
func openLoop(addr string, pid int, rate float64, warm, measure time.Duration) result {
	tr := newTransport()
	var dials atomic.Int64
	countDials(tr, &dials)
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 2 * deadline}
	url := "http://" + addr + "/"
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	from, end := start.Add(warm), start.Add(warm+measure)
	var mu sync.Mutex
	var lat, latSend []time.Duration
	var r result
	ok := 0
	var wg sync.WaitGroup
	var ran0 time.Duration
	var dials0 int64
	marked := false
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if !at.Before(end) {
			break
		}
		if !marked && !at.Before(from) {
			marked = true
			ran0, dials0 = serverRun(pid), dials.Load()
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		counted := !at.Before(from)
		wg.Go(func() {
			sent := time.Now()
			resp, err := cl.Get(url)
			code := 0
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				code = resp.StatusCode
			}
			now := time.Now()
			if !counted {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch took := now.Sub(at); {
			case code/100 == 2 && took <= deadline:
				ok++
				lat = append(lat, took)
				latSend = append(latSend, now.Sub(sent))
			case code == http.StatusServiceUnavailable:
				r.refused++
			default:
				r.fail++
			}
		})
	}
	r.ran, r.dials = serverRun(pid)-ran0, dials.Load()-dials0
	wg.Wait()
	r.goodput = float64(ok) / measure.Seconds()
	r.p99, r.p99Send = p99(lat), p99(latSend)
	return r
}

func p99(l []time.Duration) time.Duration {
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	return l[len(l)*99/100]
}

// closedLoop measures capacity: conns clients each sending its next request when
// the last is answered, for d; it returns answers per second.
func closedLoop(addr string, conns int, d time.Duration) float64 {
	tr := newTransport()
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 2 * deadline}
	end := time.Now().Add(d)
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for time.Now().Before(end) {
				resp, err := cl.Get("http://" + addr + "/")
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / d.Seconds()
}
