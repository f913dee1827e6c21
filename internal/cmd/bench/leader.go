package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
)

var failoverLine = regexp.MustCompile(`failover_(graceful|crash)_ms=([0-9.]+) \(worst of \d+: ([0-9. ]+); TTL=(\S+) CampaignEvery=(\S+)\)`)

// leaderFigures measures failover against a real redis-server (leader package,
// SW_BENCH=1), and checks the fencing store refused every stale write (the example's
// SIGSTOP test, which fails if any was accepted).
func leaderFigures(e env) ([]row, error) {
	cmd := exec.Command("go", "test", "-count=1", "-run", "^TestFailoverFigures$", "-v", "./leader/")
	cmd.Env = append(os.Environ(), "SW_BENCH=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("leader failover: %w\n%s", err, out)
	}
	figs := map[string][]float64{}
	var ttl, campaign string
	for _, m := range failoverLine.FindAllSubmatch(out, -1) {
		for _, f := range regexp.MustCompile(`[0-9.]+`).FindAll(m[3], -1) {
			v, _ := strconv.ParseFloat(string(f), 64)
			figs[string(m[1])] = append(figs[string(m[1])], v)
		}
		ttl, campaign = string(m[4]), string(m[5])
	}
	if len(figs["graceful"]) == 0 || len(figs["crash"]) == 0 {
		return nil, fmt.Errorf("no failover figures in:\n%s", out)
	}
	rows := []row{
		{
			Figure:   fmt.Sprintf("leadership failover after graceful release (CampaignEvery %s)", campaign),
			Target:   "≤ CampaignEvery + 50 ms",
			Measured: fmt.Sprintf("%.0f ms", median(figs["graceful"])),
			Baseline: "client-go default: ≈ RetryPeriod 2 s (reference, not run)",
			Verdict:  verdict(median(figs["graceful"]) <= ms(mustDur(campaign))+50),
		},
		{
			Figure:   fmt.Sprintf("leadership failover after a crash (TTL %s)", ttl),
			Target:   "≤ TTL + CampaignEvery",
			Measured: fmt.Sprintf("%.0f ms", median(figs["crash"])),
			Baseline: "client-go default: ≈ 15 s lease + 2 s retry (reference, not run)",
			Verdict:  verdict(median(figs["crash"]) <= ms(mustDur(ttl))+ms(mustDur(campaign))),
		},
	}
	stale := exec.Command("go", "test", "-count=1", "-run", "^TestLeadership$", "./cmd/example/")
	staleOut, err := stale.CombinedOutput()
	measured, v := "0 (SIGSTOP past the TTL, SIGCONT: TestLeadership passed)", "ok"
	if err != nil {
		measured, v = "stale writes accepted or test failed: "+lastLines(staleOut, 5), "FAIL"
	}
	rows = append(rows, row{
		Figure: "stale leader writes accepted by the fencing store", Target: "0",
		Measured: measured, Baseline: "lease without fencing: every write of the paused leader (by construction)", Verdict: v,
	})
	return rows, nil
}
