package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// previousExample finds, in the BENCH.md of the last whole run, the example's exit
// figure ("… / 378.1 ms |"), to print beside this run's.
var previousExample = regexp.MustCompile(`\| the example service \(HTTP, Kafka[^|]*\|[^|]*\| [0-9.]+ ms / ([0-9.]+) ms \|`)

// exitFigure measures the example service's SIGTERM → exit with DrainDelay 0 on its
// embedded defaults (Kafka broker, store, lock), idle but settled: ready, and its
// consumer holding its partitions and fetching (the exit then leaves the group and
// ends fetches in progress). It reports the median of at least 10 runs with their
// minimum and maximum, beside the figure of the last BENCH.md.
func exitFigure(e env) ([]row, error) {
	example, err := build(e.dir, "github.com/servicewright/servicewright/cmd/example")
	if err != nil {
		return nil, err
	}
	var exits []float64
	for range max(e.runs, 10) {
		x, err := settledExit(example)
		if err != nil {
			return nil, fmt.Errorf("example: %w", err)
		}
		exits = append(exits, x)
	}
	prev := "none in BENCH.md"
	if raw, err := os.ReadFile("BENCH.md"); err == nil {
		if m := previousExample.FindSubmatch(raw); m != nil {
			prev = fmt.Sprintf("previous BENCH.md %s ms", m[1])
		}
	}
	exit := median(exits)
	return []row{{
		Figure:   fmt.Sprintf("the example service, embedded defaults, consumer fetching: SIGTERM → exit, DrainDelay=0 (%d runs)", len(exits)),
		Target:   "≤ 50 ms",
		Measured: fmt.Sprintf("%.1f ms (min %.1f, max %.1f)", exit, slices.Min(exits), slices.Max(exits)),
		Baseline: prev,
		Verdict:  verdict(exit <= 50),
	}}, nil
}

// settledExit starts the example, waits for /readyz to answer 200 and for its log to
// say that the consumer was assigned its partitions, lets the readers' first fetch
// begin, then sends SIGTERM and returns the time to exit in milliseconds.
func settledExit(bin string) (float64, error) {
	probe, err := freeAddr()
	if err != nil {
		return 0, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PROBE_ADDR="+probe, "HTTP_ADDR="+httpAddr, "GRPC_ADDR=127.0.0.1:0",
		"SW_LOG_LEVEL=info", "SW_LOG_FORMAT=json", "SW_DRAIN_DELAY=0s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer cmd.Process.Kill()
	assigned := make(chan struct{})
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), `"partitions assigned"`) && !strings.Contains(sc.Text(), `"partitions":[]`) {
				once = true
				close(assigned)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	began := time.Now()
	if err := awaitReady(bin, probe, began, time.Millisecond); err != nil {
		return 0, err
	}
	select {
	case <-assigned:
	case <-time.After(20 * time.Second):
		return 0, fmt.Errorf("%s: no partitions assigned after 20s", bin)
	}
	// The readers open and send their first fetch, which the broker holds for MaxWait
	// (500ms) on an empty partition.
	time.Sleep(100 * time.Millisecond)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	<-logDone // stderr closes at the exit
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("exit: %w", err)
	}
	return ms(time.Since(sent)), nil
}
