package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
)

var rolloutLine = regexp.MustCompile(`rollout: capacity (\d+)/s, offered (\d+)/s; steady p99 (\S+) \((\d+) admitted, (\d+) refused\); restart p99 (\S+) \(([\d.]+)× steady\) over \S+ \((\d+) admitted, (\d+) refused\); refused (\d+) with Retry-After, (\d+) without; failed (\d+) of (\d+)`)

// rolloutFigure runs the example's rollout-under-overload test without the race
// detector: two single-CPU replicas behind HAProxy offered 80 % of the pair's
// capacity, one restarted, so that the survivor is offered some 160 % of its own
// (issue 24, item 3). One run: the figure is a restart, not a median of several.
func rolloutFigure(env) ([]row, error) {
	out, err := exec.Command("go", "test", "-count=1", "-run", "^TestRolloutOverload$", "-v", "-timeout", "5m", "./internal/e2e/").CombinedOutput()
	m := rolloutLine.FindSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("rollout: %v\n%s", err, lastLines(out, 20))
	}
	ratio, _ := strconv.ParseFloat(string(m[7]), 64)
	without, _ := strconv.Atoi(string(m[11]))
	failed, _ := strconv.Atoi(string(m[12]))
	return []row{{
		Figure: "rollout at 80 % of 2 replicas' capacity behind HAProxy, one restarted (SIGTERM)",
		Target: "0 admitted failed, every 503 with Retry-After, restart p99 ≤ 3× steady",
		Measured: fmt.Sprintf("restart p99 %s (%.1f× steady), %s admitted / %s refused during it; %d failed of %s; %s refusals with Retry-After, %d without",
			m[6], ratio, m[8], m[9], failed, m[13], m[10], without),
		Baseline: fmt.Sprintf("steady p99 %s (%s admitted / %s refused), capacity %s/s, offered %s/s", m[3], m[4], m[5], m[1], m[2]),
		Verdict:  verdict(err == nil && failed == 0 && without == 0 && ratio <= 3),
	}}, nil
}
