package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// runInfo is what BENCH.md says about the run beside its figures: the machine, when the
// run started, and the load average (1, 5 and 15 minutes) at its start and its end, so a
// reader can tell a figure measured on a quiet machine from one measured on a busy one.
type runInfo struct {
	Machine   string
	Started   time.Time
	LoadStart string
	LoadEnd   string
	Runs      int
}

// render is the table printed to stdout: every row in the order measured.
func render(rows []row) string {
	var b strings.Builder
	b.WriteString("| figure | target | measured (median) | baseline, same run | verdict | `-only` |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(r.Figure), cell(r.Target), cell(r.Measured), cell(r.Baseline), cell(r.Verdict), r.Name)
	}
	return b.String()
}

// renderFile is the whole of BENCH.md: a header naming the machine and its load at the
// start and the end of the run, then the one table. It holds nothing else; earlier runs
// are in git's history of the file.
func renderFile(info runInfo, rows []row) string {
	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	fmt.Fprintf(&b, "Machine: %s. Run started %s, runs per figure: %d; load average (1, 5, 15 min) %s at the start, %s at the end.\n\n",
		info.Machine, info.Started.Format("2006-01-02 15:04 MST"), info.Runs, info.LoadStart, info.LoadEnd)
	b.WriteString(render(rows))
	b.WriteString("\nProduced by `make bench` (scripts/bench.sh), which replaces this file; a `-only` run prints its rows and writes no file unless given `-out`. Each figure's baseline is measured in the same run; the last column is the figure's name for `go run ./internal/cmd/bench -only NAME`. Earlier runs are in the file's git history.\n")
	return b.String()
}

// cell keeps a value on its table row: a newline or a pipe in an error would break it.
func cell(s string) string {
	return strings.NewReplacer("\n", " / ", "|", `\|`).Replace(s)
}

// machine describes the CPU, the Go version and the kernel.
func machine() string {
	cpu := "unknown"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(l, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	return fmt.Sprintf("%d cores (%s), %s, %s/%s, Linux %s",
		runtime.NumCPU(), cpu, runtime.Version(), runtime.GOOS, runtime.GOARCH, strings.TrimSpace(string(kernel)))
}

// loadAverage is uptime's load average, read from /proc/loadavg: "1.02 0.87 0.75".
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
