package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// goBench runs `go test -bench pattern` in pkg runs times and returns, per benchmark
// name (without the -N suffix), each metric's values across runs.
func goBench(pkg, pattern string, runs int, extra ...string) (map[string]map[string][]float64, error) {
	args := append([]string{"test", "-run", "^$", "-bench", pattern, "-benchmem", "-count", strconv.Itoa(runs)}, extra...)
	args = append(args, pkg)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go test -bench %s %s: %w\n%s", pattern, pkg, err, raw)
	}
	res := map[string]map[string][]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		// The -N suffix is GOMAXPROCS, absent when it is 1: a sub-benchmark named
		// "trace-all" or "raw-kafka-go" must not lose its last word then.
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		if res[name] == nil {
			res[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			res[name][f[i+1]] = append(res[name][f[i+1]], v)
		}
	}
	return res, nil
}

func gateFigure(e env) ([]row, error) {
	r, err := goBench("./entrypoint/", "^Benchmark(Gate|AtomicBaseline)$", e.runs)
	if err != nil {
		return nil, err
	}
	gate, base := median(r["BenchmarkGate"]["ns/op"]), median(r["BenchmarkAtomicBaseline"]["ns/op"])
	allocs := median(r["BenchmarkGate"]["allocs/op"])
	return []row{{
		Figure:   "Gate enter+leave",
		Target:   "≤ 25 ns, 0 allocs",
		Measured: fmt.Sprintf("%.1f ns, %.0f allocs", gate, allocs),
		Baseline: fmt.Sprintf("atomic.Int64 add+sub %.1f ns", base),
		Verdict:  verdict(gate <= 25 && allocs == 0),
	}}, nil
}

func readinessFigure(e env) ([]row, error) {
	r, err := goBench("./health/", "^BenchmarkReadiness(Hanging|Healthy|FromState)$", e.runs)
	if err != nil {
		return nil, err
	}
	hang := median(r["BenchmarkReadinessHanging"]["ns/op"]) / 1e6
	over := median(r["BenchmarkReadinessHanging"]["worst-over-ms"])
	healthy := median(r["BenchmarkReadinessHealthy"]["ns/op"]) / 1e3
	state := median(r["BenchmarkReadinessFromState"]["ns/op"]) / 1e3
	return []row{{
		Figure:   "readiness, one dependency hanging (CheckTimeout 20 ms)",
		Target:   "≤ CheckTimeout + 20 ms, with the breakdown",
		Measured: fmt.Sprintf("%.2f ms (worst %.2f ms over)", hang, over),
		Baseline: fmt.Sprintf("all healthy %.1f µs", healthy),
		Verdict:  verdict(hang <= 40 && over <= 20),
	}, {
		// What the Host serves: a started Monitor answers from the last results.
		Figure:   "readiness from state, one dependency hung (started Monitor)",
		Target:   "≤ 1 ms, never waiting on the dependency",
		Measured: fmt.Sprintf("%.1f µs", state),
		Baseline: fmt.Sprintf("the probe running the checks: %.2f ms", hang),
		Verdict:  verdict(state <= 1000),
	}}, nil
}
