// Command bench measures the figures of docs/architecture.md, each beside the baseline it is
// compared with, measured in the same run, and prints one table. A whole run writes it to
// BENCH.md, the whole file: the machine, its load average at the start and the end of the
// run, and every figure, the overload comparisons against the peers (bench/peers) and the
// open-loop client fleet (internal/cmd/openloop) included; history is left to git. Every
// figure is the median of several runs. Run it with `make bench`.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// row is one line of the report.
type row struct {
	Name     string // the figure that measured it, as -only names it
	Figure   string
	Target   string
	Measured string
	Baseline string
	Verdict  string
}

func main() {
	runs := flag.Int("runs", 5, "runs per figure; the median is reported")
	out := flag.String("out", "", "where to write the report (default BENCH.md for a whole run; a run with -only writes none unless asked, so that it never replaces the whole report with a part)")
	only := flag.String("only", "", "comma-separated figure names to run ("+strings.Join(figureNames(), ", ")+"); all when empty")
	flag.Parse()

	dir, err := os.MkdirTemp("", "sw-bench")
	check(err)
	defer os.RemoveAll(dir)

	start := runInfo{Machine: machine(), Started: time.Now().UTC(), LoadStart: loadAverage(), Runs: *runs}
	var rows []row
	for _, f := range figures {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), f.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s\n", f.name)
		rs, err := f.run(env{dir: dir, runs: *runs})
		if err != nil {
			rs = []row{{Figure: f.name, Measured: "error: " + err.Error(), Verdict: "FAIL"}}
		}
		for i := range rs {
			rs[i].Name = f.name
		}
		rows = append(rows, rs...)
	}
	start.LoadEnd = loadAverage()
	fmt.Print(render(rows))
	path := *out
	if path == "" && *only == "" {
		path = "BENCH.md"
	}
	if path != "" {
		check(os.WriteFile(path, []byte(renderFile(start, rows)), 0o644))
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
	{"overload", overloadFigure},
	{"overloadgrpc", overloadGRPCFigure},
	{"idle", idleFigure},
	{"openloop", openLoopFigure},
}

// figureNames lists the figures in the order a whole run measures them.
func figureNames() []string {
	names := make([]string, len(figures))
	for i, f := range figures {
		names[i] = f.name
	}
	return names
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
