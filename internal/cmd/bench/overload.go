package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// The overload figures run the comparison programs that live outside this command —
// bench/peers (a module of its own, so go.mod never requires go-zero or kratos) and
// internal/cmd/openloop — and turn the tables they print into rows of the report, so that
// BENCH.md holds every figure of the run in one table.

var (
	shareCell   = regexp.MustCompile(`\(([\d.]+)×\)`)
	idleSummary = regexp.MustCompile(`admission on vs off: median ratio ([\d.]+) vs ([\d.]+) \(difference ([+-]?[\d.]+) %`)
)

// overloadFigure compares httpentry's adaptive admission with bare net/http, go-zero's
// shedder and kratos' BBR: a 2 ms CPU handler, open loop at multiples of the capacity.
func overloadFigure(env) ([]row, error) {
	return peersOverload("HTTP", "bare", "httpentry", ".")
}

// overloadGRPCFigure is the same over gRPC: bare grpc-go against grpcentry.
func overloadGRPCFigure(env) ([]row, error) {
	return peersOverload("gRPC", "grpc-bare", "grpcentry", ".", "-grpc")
}

func peersOverload(transport, bare, ours string, args ...string) ([]row, error) {
	out, err := runTool("bench/peers", append([]string{"run"}, args...)...)
	rows := peersRows(out, transport, bare, ours)
	if err != nil || rows == nil {
		return nil, fmt.Errorf("bench/peers %s: %v: %s", strings.Join(args, " "), err, lastLines([]byte(out), 5))
	}
	return rows, nil
}

// peersRows turns bench/peers' table into a row per server but the bare one, which is
// every row's baseline; nil when out holds no table.
func peersRows(out, transport, bare, ours string) []row {
	header, body := mdTable(out)
	if len(header) < 3 {
		return nil
	}
	cells := map[string][]string{}
	for _, r := range body {
		cells[r[0]] = r
	}
	levels := func(r []string) string {
		var parts []string
		for i := 1; i+1 < len(r) && i+1 < len(header); i += 2 {
			parts = append(parts, fmt.Sprintf("%s: %s, p99 %s", strings.TrimSuffix(header[i], " goodput"), r[i], r[i+1]))
		}
		return strings.Join(parts, "; ")
	}
	var rows []row
	for _, r := range body {
		if r[0] == bare {
			continue
		}
		rw := row{
			Figure:   fmt.Sprintf("overload, %s: %s, a 2 ms CPU handler at GOMAXPROCS=1, open loop at multiples of capacity; goodput = answered within 1 s", transport, r[0]),
			Target:   "reported",
			Measured: levels(r),
			Baseline: bare + ": " + levels(cells[bare]),
			Verdict:  "—",
		}
		if r[0] == ours {
			rw.Target = "at the top level: goodput ≥ 0.90× capacity, p99 ≤ 3× its p99 at the first (unloaded) level"
			rw.Verdict = verdict(peersGoal(r))
		}
		rows = append(rows, rw)
	}
	return rows
}

// peersGoal reads the goal off a row of bench/peers' table: the share at the top level
// and its p99 over the first level's.
func peersGoal(r []string) bool {
	if len(r) < 5 {
		return false
	}
	share := shareCell.FindStringSubmatch(r[len(r)-2])
	lo, hi := leadingFloat(r[2]), leadingFloat(r[len(r)-1])
	if share == nil || lo <= 0 || hi <= 0 {
		return false
	}
	s, _ := strconv.ParseFloat(share[1], 64)
	return s >= 0.90 && hi <= 3*lo
}

// idleFigure is admission's cost below capacity: a trivial handler, a closed loop, httpentry
// with admission on and off, each as a ratio to bare net/http in interleaved runs.
func idleFigure(e env) ([]row, error) {
	runs := max(e.runs, 5)
	out, err := runTool("bench/peers", "run", ".", "-idle", strconv.Itoa(runs))
	r, ok := idleRow(out, runs)
	if err != nil || !ok {
		return nil, fmt.Errorf("bench/peers -idle: %v: %s", err, lastLines([]byte(out), 5))
	}
	return []row{r}, nil
}

// idleRow reads bench/peers -idle's table and summary line; false when out has no summary.
func idleRow(out string, runs int) (row, bool) {
	m := idleSummary.FindStringSubmatch(out)
	if m == nil {
		return row{}, false
	}
	_, body := mdTable(out)
	bare := ""
	for _, r := range body {
		if r[0] == "bare" && len(r) > 1 {
			bare = ", bare " + r[1] + " req/s"
		}
	}
	diff, _ := strconv.ParseFloat(m[3], 64)
	return row{
		Figure:   fmt.Sprintf("admission's cost below capacity: httpentry vs bare net/http, trivial handler, closed loop of 32 connections (%d interleaved runs)", runs),
		Target:   "within 1 % of admission off",
		Measured: fmt.Sprintf("median ratio to bare %s with admission on (%+.1f %%)", m[1], diff),
		Baseline: "admission off " + m[2] + bare,
		Verdict:  verdict(diff >= -1 && diff <= 1),
	}, true
}

// openLoopFigure is the overload as a vegeta-shaped client fleet sees it: a goroutine and
// a connection per outstanding request, server and generator pinned to a core each.
func openLoopFigure(env) ([]row, error) {
	out, err := runTool(".", "run", "./internal/cmd/openloop")
	rows := openLoopRows(out)
	if err != nil || rows == nil {
		return nil, fmt.Errorf("openloop: %v: %s", err, lastLines([]byte(out), 5))
	}
	return rows, nil
}

// openLoopRows turns openloop's table into a row per server but bare net/http, which is
// every row's baseline; nil when out holds no table.
func openLoopRows(out string) []row {
	header, body := mdTable(out)
	if len(header) < 6 {
		return nil
	}
	all := func(r []string) string {
		var parts []string
		for i := 1; i < len(r) && i < len(header); i++ {
			parts = append(parts, header[i]+" "+r[i])
		}
		return strings.Join(parts, "; ")
	}
	var bare []string
	for _, r := range body {
		if r[0] == "bare" {
			bare = r
		}
	}
	var rows []row
	for _, r := range body {
		if r[0] == "bare" {
			continue
		}
		ok := len(r) == len(header) && leadingFloat(r[len(r)-3]) >= 0.90
		for i := 5; i < len(r); i += 3 {
			ok = ok && leadingFloat(r[i]) > 0 && leadingFloat(r[i]) <= 3
		}
		rows = append(rows, row{
			Figure:   "overload, open-loop client fleet (a goroutine and a keep-alive connection per request): " + r[0] + ", 2 ms CPU handler, server and generator on a core each",
			Target:   "p99 from schedule ≤ 3× unloaded at every level, goodput at the top level ≥ 0.90×",
			Measured: all(r),
			Baseline: "bare net/http: " + all(bare),
			Verdict:  verdict(ok),
		})
	}
	return rows
}

// runTool runs go with args in dir, its progress on stderr, and returns what it printed.
func runTool(dir string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	os.Stderr.Write(out.Bytes())
	return out.String(), err
}

// mdTable parses the first Markdown table of out: its header's cells and its body's rows,
// the separator line skipped.
func mdTable(out string) (header []string, body [][]string) {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			if header != nil {
				break
			}
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], "---"):
		default:
			body = append(body, cells)
		}
	}
	return header, body
}

// leadingFloat is the number a cell starts with ("10.1 ms", "0.93×"), 0 when none.
func leadingFloat(s string) float64 {
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(s)
	}
	f, _ := strconv.ParseFloat(s[:end], 64)
	return f
}
