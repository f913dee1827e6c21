package main

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// result is what one open-loop run measured.
type result struct {
	offered  float64 // requests per second sent
	goodput  float64 // 2xx answered within deadline, per second
	refused  float64 // 503s per second
	failed   float64 // errors and late answers per second
	p50, p99 time.Duration
	share    float64 // goodput over the capacity measured before the run
}

// median is the median of xs by key.
func median[T any](xs []T, key func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = key(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// medianResult is each figure's median over runs.
func medianResult(runs []result) result {
	return result{
		offered: median(runs, func(r result) float64 { return r.offered }),
		goodput: median(runs, func(r result) float64 { return r.goodput }),
		refused: median(runs, func(r result) float64 { return r.refused }),
		failed:  median(runs, func(r result) float64 { return r.failed }),
		p50:     time.Duration(median(runs, func(r result) float64 { return float64(r.p50) })),
		p99:     time.Duration(median(runs, func(r result) float64 { return float64(r.p99) })),
		share:   median(runs, func(r result) float64 { return r.share }),
	}
}

// deadline is how late a 2xx may be and still count as goodput.
const deadline = time.Second

// openLoop sends rate requests per second to url for warm+measure, each at its
// scheduled instant whatever the server's pace (an open loop: a slow server does not
// slow the arrivals), and measures what answered during measure. A request's latency
// counts from its scheduled instant, so a late sender does not hide queueing.
func openLoop(url string, rate float64, warm, measure time.Duration) result {
	cl := newClient(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"))
	defer cl.close()
	return openLoopCall(url, func(deadline time.Time) (answer, error) {
		code, err := cl.do(deadline)
		switch {
		case code >= 200 && code < 300:
			return answerOK, err
		case code == http.StatusServiceUnavailable:
			return answerRefused, err
		}
		if err == nil {
			err = fmt.Errorf("code %d", code)
		}
		return answerFailed, err
	}, rate, warm, measure)
}

// answer is how a request of an open loop ended.
type answer int

const (
	answerOK      answer = iota // served
	answerRefused               // refused for overload (503; RESOURCE_EXHAUSTED or UNAVAILABLE)
	answerFailed                // anything else
)

// openLoopCall is openLoop with call sending each request; name labels its errors.
func openLoopCall(name string, call func(deadline time.Time) (answer, error), rate float64, warm, measure time.Duration) result {
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	measureFrom := start.Add(warm)
	end := measureFrom.Add(measure)

	var mu sync.Mutex
	var lat []time.Duration
	var ok, refused, failed int
	var firstErr string
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8192) // beyond this many outstanding, a request counts as failed unsent
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if !at.Before(end) {
			break
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		counted := !at.Before(measureFrom)
		select {
		case sem <- struct{}{}:
		default:
			if counted {
				mu.Lock()
				failed++
				mu.Unlock()
			}
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			a, err := call(at.Add(2 * deadline))
			took := time.Since(at)
			if !counted {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case a == answerOK && took <= deadline:
				ok++
				lat = append(lat, took)
			case a == answerRefused:
				refused++
			default:
				failed++
				if firstErr == "" {
					firstErr = fmt.Sprintf("after %v, error %v", took, err)
				}
			}
		})
	}
	wg.Wait()
	if firstErr != "" {
		fmt.Fprintf(os.Stderr, "%s at %.0f/s: %d failed, the first: %s\n", name, rate, failed, firstErr)
	}
	secs := measure.Seconds()
	r := result{offered: rate, goodput: float64(ok) / secs, refused: float64(refused) / secs, failed: float64(failed) / secs}
	if len(lat) > 0 {
		slices.Sort(lat)
		r.p50 = lat[len(lat)/2]
		r.p99 = lat[len(lat)*99/100]
	}
	return r
}
