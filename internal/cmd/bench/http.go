package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"time"
)

var wrkRate = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// httpFigure loads the same handler served by httpentry and by bare net/http with
// wrk on loopback, alternating, and reports the throughput ratio; and the
// middleware's cost per request from its Go benchmark.
func httpFigure(e env) ([]row, error) {
	if _, err := exec.LookPath("wrk"); err != nil {
		return nil, fmt.Errorf("wrk is not installed (apt-get install wrk)")
	}
	bin, err := build(e.dir, "github.com/servicewright/servicewright/internal/cmd/httpbench")
	if err != nil {
		return nil, err
	}
	rps := map[string][]float64{}
	for range e.runs {
		for _, mode := range []string{"bare", "entry", "entry+tracing", "entry+tracing+recording"} {
			r, err := wrkRun(bin, mode)
			if err != nil {
				return nil, err
			}
			rps[mode] = append(rps[mode], r)
		}
	}
	bare, entry := median(rps["bare"]), median(rps["entry"])
	traced, recorded := median(rps["entry+tracing"]), median(rps["entry+tracing+recording"])
	// Each run's ratio is taken against the bare run beside it (the modes alternate),
	// so a drift of the machine between runs cancels; the median is judged and the
	// spread printed, so a reader can tell noise from a gap.
	ratio, spread := ratios(rps["entry"], rps["bare"])
	tracedRatio, tracedSpread := ratios(rps["entry+tracing"], rps["bare"])
	recordedRatio, recordedSpread := ratios(rps["entry+tracing+recording"], rps["bare"])
	rows := []row{{
		Figure:   "httpentry vs bare net/http, same handler, wrk on loopback",
		Target:   fmt.Sprintf("throughput ratio ≥ 0.98 (median of %d interleaved runs)", e.runs),
		Measured: fmt.Sprintf("%.0f req/s (ratio %s)", entry, spread),
		Baseline: fmt.Sprintf("bare net/http %.0f req/s", bare),
		Verdict:  verdict(ratio >= 0.98),
	}, {
		Figure:   "httpentry with tracing on and no exporter vs bare net/http",
		Target:   "reported",
		Measured: fmt.Sprintf("%.0f req/s (ratio %s)", traced, tracedSpread),
		Baseline: fmt.Sprintf("without tracing %.0f req/s (ratio %.3f)", entry, ratio),
		Verdict:  verdictReported(tracedRatio),
	}, {
		Figure:   "httpentry with every span recorded, no exporter, vs bare net/http",
		Target:   "reported",
		Measured: fmt.Sprintf("%.0f req/s (ratio %s)", recorded, recordedSpread),
		Baseline: fmt.Sprintf("without tracing %.0f req/s (ratio %.3f)", entry, ratio),
		Verdict:  verdictReported(recordedRatio),
	}}
	r, err := goBench("./entrypoint/httpentry/", "^BenchmarkMiddleware$", e.runs)
	if err != nil {
		return nil, err
	}
	var bareNs, gateNs, metricsNs, gateAllocs, metricsAllocs, bareAllocs float64
	for name, m := range r {
		switch name {
		case "BenchmarkMiddleware/bare":
			bareNs, bareAllocs = median(m["ns/op"]), median(m["allocs/op"])
		case "BenchmarkMiddleware/gate":
			gateNs, gateAllocs = median(m["ns/op"]), median(m["allocs/op"])
		case "BenchmarkMiddleware/gate+metrics":
			metricsNs, metricsAllocs = median(m["ns/op"]), median(m["allocs/op"])
		}
	}
	rows = append(rows, row{
		Figure:   "httpentry middleware per request (gate / gate+metrics)",
		Target:   "reported",
		Measured: fmt.Sprintf("%.0f ns, %.0f allocs / %.0f ns, %.0f allocs", gateNs, gateAllocs, metricsNs, metricsAllocs),
		Baseline: fmt.Sprintf("bare handler %.0f ns, %.0f allocs", bareNs, bareAllocs),
		Verdict:  "ok",
	})
	return rows, nil
}

func wrkRun(bin, mode string) (float64, error) {
	addr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	srv := exec.Command(bin, "-addr", addr, "-mode", mode)
	srv.Stderr = os.Stderr
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/hello"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("httpbench %s did not start", mode)
		}
	}
	out, err := exec.Command("wrk", "-t1", "-c32", "-d4s", "http://"+addr+"/hello").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("wrk: %w: %s", err, out)
	}
	m := wrkRate.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("wrk output without Requests/sec: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// ratios returns the median of xs[i]/base[i], run by run, and "median (min–max)".
func ratios(xs, base []float64) (float64, string) {
	var rs []float64
	for i := range min(len(xs), len(base)) {
		if base[i] > 0 {
			rs = append(rs, xs[i]/base[i])
		}
	}
	if len(rs) == 0 {
		return 0, "n/a"
	}
	med := median(rs)
	return med, fmt.Sprintf("%.3f, min %.3f, max %.3f", med, slices.Min(rs), slices.Max(rs))
}

// verdictReported is the verdict of a figure that is only reported: "ok" once it
// was measured.
func verdictReported(r float64) string {
	if r > 0 {
		return "ok"
	}
	return "n/a"
}
