package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// processFigures measures, for a servicewright service (an HTTP entrypoint under
// host.Main, with its probe listener) and for the bare net/http baseline alike: exec →
// first 200 from /readyz, and SIGTERM → exit when idle. The full example service is
// measured too, for information: its exit includes leaving the Kafka group.
func processFigures(e env) ([]row, error) {
	svc, err := build(e.dir, "github.com/servicewright/servicewright/internal/cmd/httpbench")
	if err != nil {
		return nil, err
	}
	example, err := build(e.dir, "github.com/servicewright/servicewright/cmd/example")
	if err != nil {
		return nil, err
	}
	baseline, err := build(e.dir, "github.com/servicewright/servicewright/internal/cmd/baseline")
	if err != nil {
		return nil, err
	}
	var exReady, exExit, baseReady, baseExit, fullReady, fullExit []float64
	for range e.runs {
		r, x, err := startStop(svc, []string{"-mode", "host"}, "SW_DRAIN_DELAY=0s")
		if err != nil {
			return nil, fmt.Errorf("servicewright: %w", err)
		}
		exReady, exExit = append(exReady, r), append(exExit, x)
		r, x, err = startStop(example, nil, "SW_DRAIN_DELAY=0s")
		if err != nil {
			return nil, fmt.Errorf("example: %w", err)
		}
		fullReady, fullExit = append(fullReady, r), append(fullExit, x)
		r, x, err = startStop(baseline, nil)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		baseReady, baseExit = append(baseReady, r), append(baseExit, x)
	}
	ready, bReady := median(exReady), median(baseReady)
	exit, bExit := median(exExit), median(baseExit)
	return []row{
		{
			Figure:   "exec → /readyz 200, HTTP service under host.Main",
			Target:   "≤ 50 ms",
			Measured: fmt.Sprintf("%.1f ms", ready),
			Baseline: fmt.Sprintf("bare net/http %.1f ms", bReady),
			Verdict:  verdict(ready <= 50),
		},
		{
			Figure:   "SIGTERM → exit, idle, DrainDelay=0, same service",
			Target:   "≤ 20 ms over the baseline",
			Measured: fmt.Sprintf("%.1f ms (+%.1f ms)", exit, exit-bExit),
			Baseline: fmt.Sprintf("bare net/http %.1f ms", bExit),
			Verdict:  verdict(exit-bExit <= 20),
		},
		{
			Figure:   "the example service (HTTP, Kafka, leader, cron, embedded broker): exec → ready / SIGTERM → exit, DrainDelay=0",
			Target:   "exit ≤ 50 ms",
			Measured: fmt.Sprintf("%.1f ms / %.1f ms", median(fullReady), median(fullExit)),
			Baseline: fmt.Sprintf("bare net/http %.1f ms / %.1f ms", bReady, bExit),
			Verdict:  verdict(median(fullExit) <= 50),
		},
	}, nil
}

// startStop starts bin, waits for /readyz to answer 200, sends SIGTERM and waits for
// the exit. It returns both durations in milliseconds.
func startStop(bin string, args []string, env ...string) (readyMS, exitMS float64, err error) {
	probe, err := freeAddr()
	if err != nil {
		return 0, 0, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(bin, append(args, "-addr", httpAddr)...)
	if args == nil {
		cmd = exec.Command(bin)
	}
	cmd.Env = append(os.Environ(), append([]string{"PROBE_ADDR=" + probe, "HTTP_ADDR=" + httpAddr, "GRPC_ADDR=127.0.0.1:0", "SW_LOG_LEVEL=warn"}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer cmd.Process.Kill()
	if err := awaitReady(bin, probe, began, 200*time.Microsecond); err != nil {
		return 0, 0, err
	}
	ready := time.Since(began)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, 0, err
	}
	if err := cmd.Wait(); err != nil {
		return 0, 0, fmt.Errorf("exit: %w", err)
	}
	return ms(ready), ms(time.Since(sent)), nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// awaitReady polls the /readyz of the process bin, serving probes on probe, every
// poll until it answers 200, for at most 10 s from began.
func awaitReady(bin, probe string, began time.Time, poll time.Duration) error {
	client := http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections() // no connection left to the process it times
	for {
		resp, err := client.Get("http://" + probe + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Since(began) > 10*time.Second {
			return fmt.Errorf("%s not ready after 10s", bin)
		}
		time.Sleep(poll)
	}
}
