package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var wrkRate = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// httpModes are httpbench's modes that httpFigure loads, each run in turn.
var httpModes = []string{"bare", "entry", "entry+metrics", "entry+trace-all", "entry+trace-1pct"}

// httpFigure loads the same handler served by httpentry and by bare net/http with
// wrk on loopback, interleaved, and reports the throughput ratios: httpentry as New
// makes it, with metrics (as under the Host), and with metrics and tracing, every
// request sampled or 1 % of them, through a batch processor with a discarding
// exporter. Then the middleware's cost per request from its Go benchmark.
func httpFigure(e env) ([]row, error) {
	if _, err := exec.LookPath("wrk"); err != nil {
		return nil, fmt.Errorf("wrk is not installed (apt-get install wrk)")
	}
	bin, err := build(e.dir, "github.com/servicewright/servicewright/internal/cmd/httpbench")
	if err != nil {
		return nil, err
	}
	// Each run loads every mode once, starting one mode further on each time, so
	// that no mode always goes first or right after another; each run's ratio is
	// taken against the bare run beside it, so a drift of the machine between runs
	// cancels. The median is judged and the spread printed, so a reader can tell
	// noise from a gap.
	//
	// On a machine shared with other work the throughput swings by tens of percent
	// from one run to the next, whatever the server does; the server's CPU time per
	// request does not, and is what throughput comes to when the server has the CPU
	// to itself. So the verdict is taken on the ratio of CPU per request (bare's over
	// the mode's: a throughput ratio), and the ratio of throughputs is printed beside.
	rps, cpu := map[string][]float64{}, map[string][]float64{}
	for i := range e.runs {
		for j := range httpModes {
			mode := httpModes[(i+j)%len(httpModes)]
			r, c, err := wrkRun(bin, mode)
			if err != nil {
				return nil, err
			}
			rps[mode], cpu[mode] = append(rps[mode], r), append(cpu[mode], c)
		}
	}
	ratioRow := func(figure, mode string, target float64) row {
		r, spread := ratios(cpu["bare"], cpu[mode]) // bare's CPU per request over the mode's
		_, tspread := ratios(rps[mode], rps["bare"])
		return row{
			Figure:   figure,
			Target:   fmt.Sprintf("throughput ratio ≥ %.2f, as CPU per request (median of %d interleaved runs)", target, e.runs),
			Measured: fmt.Sprintf("%.1f µs CPU/req (ratio %s); %.0f req/s (ratio %s)", median(cpu[mode]), spread, median(rps[mode]), tspread),
			Baseline: fmt.Sprintf("bare net/http %.1f µs CPU/req, %.0f req/s", median(cpu["bare"]), median(rps["bare"])),
			Verdict:  verdict(r >= target),
		}
	}
	rows := []row{
		ratioRow("httpentry vs bare net/http, same handler, wrk on loopback", "entry", 0.98),
		ratioRow("httpentry with metrics (as under the Host) vs bare net/http", "entry+metrics", 0.98),
		ratioRow("httpentry with metrics, every request traced (AlwaysSample, batch processor, discarding exporter) vs bare net/http", "entry+trace-all", 0.80),
		ratioRow("httpentry with metrics, traced 1 % (ParentBased(TraceIDRatioBased(0.01)), batch processor) vs bare net/http", "entry+trace-1pct", 0.95),
	}
	// One process per run, each running every row once, so that a row's difference
	// is taken against the bare row of the same run.
	r := map[string]map[string][]float64{}
	for range e.runs {
		one, err := goBench("./entrypoint/httpentry/", "^BenchmarkMiddleware$", 1)
		if err != nil {
			return nil, err
		}
		for name, m := range one {
			if r[name] == nil {
				r[name] = map[string][]float64{}
			}
			for k, v := range m {
				r[name][k] = append(r[name][k], v...)
			}
		}
	}
	// CPU ns per request: ns/op counts the time the benchmark waited for a CPU.
	bareNs, bareAllocs := r["BenchmarkMiddleware/bare"]["cpu-ns/op"], median(r["BenchmarkMiddleware/bare"]["allocs/op"])
	gateNs, gateAllocs := r["BenchmarkMiddleware/gate"]["cpu-ns/op"], median(r["BenchmarkMiddleware/gate"]["allocs/op"])
	metricsNs, metricsAllocs := r["BenchmarkMiddleware/gate+metrics"]["cpu-ns/op"], median(r["BenchmarkMiddleware/gate+metrics"]["allocs/op"])
	over, overSpread := differences(gateNs, bareNs)
	_, metricsSpread := differences(metricsNs, bareNs)
	rows = append(rows, row{
		Figure:   "httpentry middleware per request, in process: Gate with admission, recovery, response wrapper (without / with metrics)",
		Target:   "≤ +100 ns over the bare handler, no allocation of its own (without metrics)",
		Measured: fmt.Sprintf("+%s ns CPU, %.0f allocs / +%s ns CPU, %.0f allocs", overSpread, gateAllocs, metricsSpread, metricsAllocs),
		Baseline: fmt.Sprintf("bare handler %.1f ns CPU, %.0f allocs", median(bareNs), bareAllocs),
		Verdict:  verdict(over <= 100 && gateAllocs == bareAllocs && metricsAllocs == bareAllocs),
	})
	return rows, nil
}

// differences returns the median of xs[i]-base[i], run by run, and "median (min
// min, max max)".
func differences(xs, base []float64) (float64, string) {
	var ds []float64
	for i := range min(len(xs), len(base)) {
		ds = append(ds, xs[i]-base[i])
	}
	if len(ds) == 0 {
		return 0, "n/a"
	}
	med := median(ds)
	return med, fmt.Sprintf("%.0f (min %.0f, max %.0f)", med, slices.Min(ds), slices.Max(ds))
}

// wrkRun serves mode with bin and loads it with wrk for 4 s. It returns the
// requests per second and the server's CPU time per request in µs: the CPU time of
// its threads (their schedstat, in ns) across the load, divided by the requests
// wrk counted. The CPU per request holds on a machine shared with other work, where
// the throughput swings with what else runs.
func wrkRun(bin, mode string) (rps, cpuPerReq float64, err error) {
	addr, err := freeAddr()
	if err != nil {
		return 0, 0, err
	}
	srv := exec.Command(bin, "-addr", addr, "-mode", mode)
	srv.Stderr = os.Stderr
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		return 0, 0, err
	}
	defer func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/hello"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("httpbench %s did not start", mode)
		}
	}
	before, err := threadsCPU(srv.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	out, err := exec.Command("wrk", "-t1", "-c32", "-d4s", "http://"+addr+"/hello").CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("wrk: %w: %s", err, out)
	}
	after, err := threadsCPU(srv.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	m, n := wrkRate.FindSubmatch(out), wrkTotal.FindSubmatch(out)
	if m == nil || n == nil {
		return 0, 0, fmt.Errorf("wrk output without Requests/sec or a request count: %s", out)
	}
	rps, err = strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return 0, 0, err
	}
	total, err := strconv.ParseFloat(string(n[1]), 64)
	if err != nil || total == 0 {
		return 0, 0, fmt.Errorf("wrk counted no requests: %s", out)
	}
	return rps, float64(after-before) / 1e3 / total, nil
}

// wrkTotal finds the request count in wrk's output: "123456 requests in 4.00s".
var wrkTotal = regexp.MustCompile(`([0-9]+) requests in`)

// threadsCPU is the CPU time, in ns, of the threads of process pid so far: the sum
// of the first field of their /proc schedstat.
func threadsCPU(pid int) (int64, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, t := range tasks {
		raw, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(raw))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		sum += ns
	}
	return sum, nil
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
