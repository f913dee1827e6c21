package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
)

var fleetLine = regexp.MustCompile(`fleet_figure backend=(\w+) wake=(\w+) n=(\d+) cmds_per_s=([0-9.]+) graceful_ms=([0-9.]+) crash_ms=([0-9.]+)`)

// fleetFig is one fleet_figure line of the leader package's TestFleetFigures.
type fleetFig struct {
	cmds, graceful, crash float64
}

// leaderFigures measures leadership at the default timings (TTL 15s, CampaignEvery
// 2s) on a real Redis and a real PostgreSQL, for 3, 10 and 30 campaigners, with
// wake on release beside polling in the same run (leader package, SW_BENCH=1), and
// checks that the fencing store refused every stale write (the example's SIGSTOP
// tests on Redis and PostgreSQL, which fail if any was accepted).
func leaderFigures(e env) ([]row, error) {
	cmd := exec.Command("go", "test", "-count=1", "-timeout=30m", "-run", "^TestFleetFigures$", "-v", "./leader/")
	cmd.Env = append(os.Environ(), "SW_BENCH=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("leader fleet figures: %w\n%s", err, lastLines(out, 20))
	}
	figs := map[string]fleetFig{} // backend/wake/n
	for _, m := range fleetLine.FindAllSubmatch(out, -1) {
		f := func(i int) float64 { v, _ := strconv.ParseFloat(string(m[i]), 64); return v }
		k := string(m[1]) + "/" + string(m[2]) + "/" + string(m[3])
		figs[k] = fleetFig{cmds: f(4), graceful: f(5), crash: f(6)}
	}
	if len(figs) == 0 {
		return nil, fmt.Errorf("no fleet figures in:\n%s", lastLines(out, 20))
	}
	const ttl, campaign = 15000.0, 2000.0
	var rows []row
	for _, backend := range []string{"redis", "postgres"} {
		for _, n := range []string{"3", "10", "30"} {
			w, okW := figs[backend+"/on_release/"+n]
			p, okP := figs[backend+"/poll/"+n]
			if !okW || !okP {
				continue
			}
			name := map[string]string{"redis": "Redis", "postgres": "PostgreSQL"}[backend]
			crashTarget, crashLimit := "≤ TTL + CampaignEvery", ttl+campaign
			if backend == "postgres" {
				crashTarget, crashLimit = "≤ CampaignEvery + 100 ms", campaign+100
			}
			rows = append(rows,
				row{
					Figure:   fmt.Sprintf("leadership graceful failover, %s, %s campaigners (defaults)", name, n),
					Target:   "≤ 50 ms",
					Measured: fmt.Sprintf("%.0f ms (wake on release)", w.graceful),
					Baseline: fmt.Sprintf("polling: %.0f ms", p.graceful),
					Verdict:  verdict(w.graceful <= 50),
				},
				row{
					Figure:   fmt.Sprintf("leadership crash failover, %s, %s campaigners (defaults)", name, n),
					Target:   crashTarget,
					Measured: fmt.Sprintf("%.0f ms", w.crash),
					Baseline: fmt.Sprintf("polling: %.0f ms", p.crash),
					Verdict:  verdict(w.crash <= crashLimit),
				},
				row{
					Figure:   fmt.Sprintf("lock commands/s per campaigner while one leads, %s, %s campaigners", name, n),
					Target:   "≤ polling",
					Measured: fmt.Sprintf("%.2f", w.cmds),
					Baseline: fmt.Sprintf("polling: %.2f", p.cmds),
					Verdict:  verdict(w.cmds <= p.cmds*1.1+0.05),
				},
			)
		}
	}
	stale := exec.Command("go", "test", "-count=1", "-run", "^TestLeadership(Postgres)?$", "./cmd/example/")
	staleOut, err := stale.CombinedOutput()
	measured, v := "0 (SIGSTOP past the TTL, SIGCONT, on Redis and PostgreSQL: TestLeadership and TestLeadershipPostgres passed)", "ok"
	if err != nil {
		measured, v = "stale writes accepted or test failed: "+lastLines(staleOut, 5), "FAIL"
	}
	rows = append(rows, row{
		Figure: "stale leader writes accepted by the fencing store", Target: "0",
		Measured: measured, Baseline: "lease without fencing: every write of the paused leader (by construction)", Verdict: v,
	})
	return rows, nil
}
