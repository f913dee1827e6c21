// Command bench measures the figures of docs/architecture.md, each beside the baseline it is
// compared with, measured in the same run, and prints one table (also written to
// BENCH.md with a description of the machine). Every figure is the median of several
// runs. Run it with `make bench`.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// row is one line of the report.
type row struct {
	Figure   string
	Target   string
	Measured string
	Baseline string
	Verdict  string
}

func main() {
	runs := flag.Int("runs", 5, "runs per figure; the median is reported")
	out := flag.String("out", "", "where to write the report (default BENCH.md for a whole run; a run with -only writes none unless asked, so that it never replaces the whole report with a part)")
	only := flag.String("only", "", "comma-separated figure names to run (gate, readiness, http, headerflood, grpc, grpcreset, leader, rolling, rollout, kafka, kafkacost, outbox, process, exit, weight); all when empty")
	flag.Parse()

	dir, err := os.MkdirTemp("", "sw-bench")
	check(err)
	defer os.RemoveAll(dir)

	var rows []row
	for _, f := range figures {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), f.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s\n", f.name)
		rs, err := f.run(env{dir: dir, runs: *runs})
		if err != nil {
			rows = append(rows, row{Figure: f.name, Measured: "error: " + err.Error(), Verdict: "FAIL"})
			continue
		}
		rows = append(rows, rs...)
	}
	report := render(rows)
	fmt.Print(report)
	path := *out
	if path == "" && *only == "" {
		path = "BENCH.md"
	}
	if path != "" {
		check(os.WriteFile(path, []byte("# Benchmarks\n\n"+machine()+"\n"+report+"\nProduced by `make bench`.\n"), 0o644))
	}
	for _, r := range rows {
		if r.Verdict == "FAIL" {
			os.Exit(1)
		}
	}
}

// env is what a figure gets to work with.
type env struct {
	dir  string
	runs int
}

// figure measures one or more rows.
type figure struct {
	name string
	run  func(env) ([]row, error)
}

var figures = []figure{
	{"gate", gateFigure},
	{"readiness", readinessFigure},
	{"http", httpFigure},
	{"headerflood", headerFloodFigure},
	{"grpc", grpcFigure},
	{"grpcreset", grpcResetFigure},
	{"leader", leaderFigures},
	{"rolling", rollingFigure},
	{"rollout", rolloutFigure},
	{"kafka", kafkaFigures},
	{"kafkacost", kafkaCostFigures},
	{"outbox", outboxFigures},
	{"process", processFigures},
	{"exit", exitFigure},
	{"weight", weightFigure},
}

func render(rows []row) string {
	var b strings.Builder
	b.WriteString("| figure | target | measured (median) | baseline, same run | verdict |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Figure, r.Target, r.Measured, r.Baseline, r.Verdict)
	}
	return b.String()
}

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
	return fmt.Sprintf("Machine: %d cores (%s), %s, %s/%s, Linux %s, measured %s.\n",
		runtime.NumCPU(), cpu, runtime.Version(), runtime.GOOS, runtime.GOARCH,
		strings.TrimSpace(string(kernel)), time.Now().UTC().Format("2006-01-02 15:04 MST"))
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}

// build compiles pkg into dir.
func build(dir, pkg string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Stderr = os.Stderr
	return bin, cmd.Run()
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
