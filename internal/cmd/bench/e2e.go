package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
)

var (
	rollingOurs  = regexp.MustCompile(`servicewright: (\d+) requests in \S+ \((\d+)/s\), (\d+) failed`)
	rollingNaive = regexp.MustCompile(`naive: (\d+) requests, (\d+) failed`)
	kafkaKills   = regexp.MustCompile(`after (\d+) kills: (\d+) orders stored more than once, (\d+) extra deliveries`)
)

// rollingFigure runs the HAProxy rolling-restart test at bench size: two replicas,
// restarted in turn under load, beside a naive net/http server in the same run.
func rollingFigure(e env) ([]row, error) {
	cmd := exec.Command("go", "test", "-count=1", "-run", "^TestRollingRestart$", "-v", "-timeout", "20m", "./internal/e2e/")
	cmd.Env = append(os.Environ(), "SW_ROLLING_RATE=1000", "SW_ROLLING_ROUNDS=10")
	out, err := cmd.CombinedOutput()
	ours, naive := rollingOurs.FindSubmatch(out), rollingNaive.FindSubmatch(out)
	if ours == nil || naive == nil {
		return nil, fmt.Errorf("rolling restart: %v\n%s", err, lastLines(out, 20))
	}
	total, _ := strconv.Atoi(string(ours[1]))
	failed, _ := strconv.Atoi(string(ours[3]))
	return []row{{
		Figure:   "rolling restart, 2 replicas × 10 restarts behind HAProxy under load",
		Target:   "0 failed of ≥ 20 000",
		Measured: fmt.Sprintf("%d failed of %d (%s req/s)", failed, total, ours[2]),
		Baseline: fmt.Sprintf("naive net/http: %s failed of %s", naive[2], naive[1]),
		Verdict:  verdict(err == nil && failed == 0 && total >= 20000),
	}}, nil
}

// kafkaFigures runs the example's 20 000-order restart test (kcat produces, two
// replicas consume, one restarted five times); kafkaCostFigures (kafkacost.go) the
// consume benchmark.
func kafkaFigures(e env) ([]row, error) {
	out, err := exec.Command("go", "test", "-count=1", "-run", "^TestKafkaRestarts$", "-v", "-timeout", "20m", "./internal/e2e/").CombinedOutput()
	kills := kafkaKills.FindSubmatch(out)
	if kills == nil {
		return nil, fmt.Errorf("kafka restarts: %v\n%s", err, lastLines(out, 20))
	}
	rows := []row{{
		Figure:   "Kafka: 20 000 orders, one of two replicas restarted 5× mid-stream (SIGTERM)",
		Target:   "0 lost, 0 re-delivered after commit",
		Measured: map[bool]string{true: "0 lost, 0 re-delivered", false: "FAILED: " + lastLines(out, 3)}[err == nil],
		Baseline: fmt.Sprintf("SIGKILL instead: 0 lost, %s orders handled twice (handled, not yet committed)", kills[2]),
		Verdict:  verdict(err == nil),
	}}
	return rows, nil
}
