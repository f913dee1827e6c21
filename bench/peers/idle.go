package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// idleCost measures what admission costs below capacity: the throughput of a
// trivial handler (no CPU burnt) served by bare net/http, by httpentry with
// admission on (the default) and with it off, each server at GOMAXPROCS=1 and
// loaded by a closed loop of 32 keep-alive connections, in runs interleaved
// server by server so that the machine's drift hits all three alike. It prints each
// ratio to bare as min / median / max over the runs.
func idleCost(self string, runs int) {
	kinds := []string{"bare", "httpentry", "httpentry-off"}
	rps := map[string][]float64{}
	ratio := map[string][]float64{}
	for range runs {
		got := map[string]float64{}
		for _, k := range kinds {
			p := start(self, k, 0)
			addr := strings.TrimSuffix(strings.TrimPrefix(p.url, "http://"), "/")
			closedLoopRaw(addr, 32, 500*time.Millisecond) // warm up
			got[k] = closedLoopRaw(addr, 32, 2*time.Second)
			p.stop()
			rps[k] = append(rps[k], got[k])
		}
		for _, k := range kinds[1:] {
			ratio[k] = append(ratio[k], got[k]/got["bare"])
		}
	}
	fmt.Printf("below capacity: trivial handler, server at GOMAXPROCS=1, closed loop of 32 connections, %d interleaved runs of 2 s\n\n", runs)
	fmt.Println("| server | req/s (median) | ratio to bare: min / median / max |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| bare | %.0f | — |\n", med(rps["bare"]))
	for _, k := range kinds[1:] {
		r := slices.Clone(ratio[k])
		slices.Sort(r)
		fmt.Printf("| %s | %.0f | %.3f / %.3f / %.3f |\n", k, med(rps[k]), r[0], med(r), r[len(r)-1])
	}
	on, off := med(ratio["httpentry"]), med(ratio["httpentry-off"])
	fmt.Printf("\nadmission on vs off: median ratio %.3f vs %.3f (difference %+.1f %%; goal within 1 %%)\n", on, off, 100*(on-off)/off)
}

func med(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// closedLoopRaw is closedLoop with the minimal client: conns connections each
// sending its next request when the last is answered, for d; it returns 2xx per
// second.
func closedLoopRaw(addr string, conns int, d time.Duration) float64 {
	end := time.Now().Add(d)
	counts := make(chan int, conns)
	for range conns {
		go func() {
			cl := newClient(addr)
			defer cl.close()
			n := 0
			for time.Now().Before(end) {
				if code, err := cl.do(time.Now().Add(5 * time.Second)); err == nil && code/100 == 2 {
					n++
				}
			}
			counts <- n
		}()
	}
	total := 0
	for range conns {
		total += <-counts
	}
	return float64(total) / d.Seconds()
}
