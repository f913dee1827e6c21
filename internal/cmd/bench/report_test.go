package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRenderFile holds BENCH.md to what make bench promises: one table with a row for every
// figure the tool registers, the machine and the load at both ends of the run in the
// header, and nothing after the table but the one line saying how it was produced.
func TestRenderFile(t *testing.T) {
	info := runInfo{Machine: "2 cores (Test CPU), go1.26, linux/amd64", Started: time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC), LoadStart: "0.52 0.40 0.33", LoadEnd: "1.90 1.20 0.80", Runs: 5}
	var rows []row
	for _, name := range figureNames() {
		rows = append(rows, row{Name: name, Figure: "figure of " + name, Target: "≤ 1 ms", Measured: "0.5 ms | a pipe\nand a newline", Baseline: "bare 0.4 ms", Verdict: "ok"})
	}
	got := renderFile(info, rows)

	lines := strings.Split(got, "\n")
	if lines[0] != "# Benchmarks" {
		t.Errorf("first line %q, want the title", lines[0])
	}
	for _, want := range []string{info.Machine, "0.52 0.40 0.33 at the start", "1.90 1.20 0.80 at the end", "2026-12-06 04:00 UTC", "runs per figure: 5"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("header %q does not name %q", lines[2], want)
		}
	}
	var table []string
	for _, l := range lines {
		if strings.HasPrefix(l, "|") {
			table = append(table, l)
		}
	}
	if len(table) != 2+len(figureNames()) {
		t.Fatalf("%d table lines, want header, separator and %d rows:\n%s", len(table), len(figureNames()), got)
	}
	for i, name := range figureNames() {
		l := table[2+i]
		if !strings.HasSuffix(l, "| "+name+" |") || !strings.Contains(l, "figure of "+name) {
			t.Errorf("row %d is %q, want figure %s", i, l, name)
		}
		if n := strings.Count(l, "|") - strings.Count(l, `\|`); n != 7 {
			t.Errorf("row %q has %d column separators, want 7", l, n)
		}
	}
	if strings.Count(got, "# ") != 1 {
		t.Errorf("BENCH.md holds more than one section:\n%s", got)
	}
}

// TestFiguresIncludeOverload: the figures scripts/bench.sh used to run after the tool are
// figures of the tool, so a whole run writes them into the one table.
func TestFiguresIncludeOverload(t *testing.T) {
	names := strings.Join(figureNames(), ",")
	for _, want := range []string{"overload", "overloadgrpc", "idle", "openloop"} {
		if !strings.Contains(","+names+",", ","+want+",") {
			t.Errorf("figure %s is not registered (have %s)", want, names)
		}
	}
}

func TestPeersRows(t *testing.T) {
	out := `handler: 1234 hash rounds ≈ 2ms of CPU

| server | 0.1× (48/s) goodput | p99 | 2.0× (966/s) goodput | p99 | 4.0× (1962/s) goodput | p99 |
|---|---|---|---|---|---|---|
| bare | 48/s (0.10×) | 3.0 ms | 0/s (0.00×) | 0.0 ms | 0/s (0.00×) | 0.0 ms |
| httpentry | 48/s (0.10×) | 3.5 ms | 432/s (0.96×) | 7.1 ms | 463/s (0.93×) | 10.1 ms |
| go-zero | 48/s (0.10×) | 3.1 ms | 0/s (0.00×) | 0.0 ms | 0/s (0.00×) | 0.0 ms |

refused ...
`
	rows := peersRows(out, "HTTP", "bare", "httpentry")
	if len(rows) != 2 {
		t.Fatalf("%d rows, want httpentry and go-zero: %+v", len(rows), rows)
	}
	if r := rows[0]; r.Verdict != "ok" || !strings.Contains(r.Measured, "4.0× (1962/s): 463/s (0.93×), p99 10.1 ms") || !strings.HasPrefix(r.Baseline, "bare: 0.1× (48/s): 48/s (0.10×), p99 3.0 ms") {
		t.Errorf("httpentry row %+v", r)
	}
	if rows[1].Verdict != "—" || rows[1].Target != "reported" {
		t.Errorf("a peer's row carries a verdict: %+v", rows[1])
	}
	worse := strings.Replace(out, "463/s (0.93×) | 10.1 ms", "463/s (0.93×) | 11.0 ms", 1) // 11.0 > 3 × 3.5
	if r := peersRows(worse, "HTTP", "bare", "httpentry"); r[0].Verdict != "FAIL" {
		t.Errorf("p99 over 3× the unloaded one passed: %+v", r[0])
	}
	if peersRows("no table\n", "HTTP", "bare", "httpentry") != nil {
		t.Error("rows from output without a table")
	}
}

func TestOpenLoopRows(t *testing.T) {
	out := `openloop: ...

| server | capacity | unloaded p99 (0.1×) | 0.5× goodput | p99 from schedule (from send) | ×unloaded | 4.0× goodput | p99 from schedule (from send) | ×unloaded |
|---|---|---|---|---|---|---|---|---|
| bare | 480/s | 3.0 ms | 0.50× | 4.0 ms (3.9 ms) | 1.3× | 0.00× | 0.0 ms (0.0 ms) | 0.0× |
| httpentry | 480/s | 3.2 ms | 0.50× | 4.1 ms (4.0 ms) | 1.3× | 0.92× | 8.0 ms (7.0 ms) | 2.5× |

load average after: 1.0 1.0 1.0
`
	rows := openLoopRows(out)
	if len(rows) != 1 || rows[0].Verdict != "ok" || !strings.Contains(rows[0].Measured, "4.0× goodput 0.92×") || !strings.Contains(rows[0].Baseline, "capacity 480/s") {
		t.Fatalf("rows %+v", rows)
	}
	if r := openLoopRows(strings.Replace(out, "| 0.92× |", "| 0.85× |", 1)); r[0].Verdict != "FAIL" {
		t.Errorf("goodput 0.85× at the top level passed: %+v", r[0])
	}
}

// TestCommittedReport: the committed BENCH.md is one table in the generator's shape, with
// a row (measured or marked as not yet measured) for every figure the tool registers.
func TestCommittedReport(t *testing.T) {
	raw, err := os.ReadFile("../../../BENCH.md")
	if err != nil {
		t.Fatal(err)
	}
	got := string(raw)
	if strings.Count(got, "\n#") != 0 || !strings.HasPrefix(got, "# Benchmarks\n") {
		t.Errorf("BENCH.md has sections besides its title")
	}
	head := strings.SplitN(render(nil), "\n", 2)[0]
	if strings.Count(got, head) != 1 {
		t.Errorf("BENCH.md does not hold exactly one table headed %q", head)
	}
	for _, name := range figureNames() {
		if !strings.Contains(got, "| "+name+" |\n") {
			t.Errorf("BENCH.md has no row of figure %s", name)
		}
	}
}

func TestIdleRow(t *testing.T) {
	out := "below capacity: ...\n\n| server | req/s (median) | ratio to bare: min / median / max |\n|---|---|---|\n| bare | 9120 | — |\n| httpentry | 8974 | 0.950 / 0.984 / 0.990 |\n| httpentry-off | 8975 | 0.951 / 0.984 / 0.991 |\n\nadmission on vs off: median ratio 0.984 vs 0.984 (difference +0.0 %; goal within 1 %)\n"
	r, ok := idleRow(out, 9)
	if !ok || r.Verdict != "ok" || r.Measured != "median ratio to bare 0.984 with admission on (+0.0 %)" || r.Baseline != "admission off 0.984, bare 9120 req/s" {
		t.Fatalf("row %+v, %v", r, ok)
	}
	if r, _ := idleRow(strings.Replace(out, "+0.0 %", "-1.5 %", 1), 9); r.Verdict != "FAIL" {
		t.Errorf("a 1.5 %% cost passed: %+v", r)
	}
	if _, ok := idleRow("no summary", 9); ok {
		t.Error("a row from output without the summary")
	}
}
