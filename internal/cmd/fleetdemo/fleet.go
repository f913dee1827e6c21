package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/servicewright/servicewright/internal/testenv"
)

// replica is one example process; restarts keep its ports.
type replica struct {
	name, bin, http, probe string
	probePort              int
	env                    []string
	logPath                string
	cmd                    *exec.Cmd
	done                   chan struct{}
	exitCode               int
}

type fleet struct {
	bin, logDir string
	env         []string
	replicas    []*replica
}

func (f *fleet) add(name string) (*replica, error) {
	h, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(p)
	pp, _ := strconv.Atoi(port)
	r := &replica{name: name, bin: f.bin, http: h, probe: p, probePort: pp,
		env:     append([]string{"INSTANCE_ID=" + name, "HTTP_ADDR=" + h, "PROBE_ADDR=" + p, "GRPC_ADDR=127.0.0.1:0"}, f.env...),
		logPath: filepath.Join(f.logDir, name+".log")}
	f.replicas = append(f.replicas, r)
	return r, nil
}

func (r *replica) start(ctx context.Context) error {
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	r.cmd = exec.Command(r.bin)
	r.cmd.Env = append(os.Environ(), r.env...)
	r.cmd.Stderr, r.cmd.Stdout = logf, logf
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	r.done = make(chan struct{})
	go func() {
		_ = r.cmd.Wait()
		r.exitCode = r.cmd.ProcessState.ExitCode()
		logf.Close()
		close(r.done)
	}()
	client := http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(20 * time.Second); ; {
		if resp, err := client.Get("http://" + r.probe + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-r.done:
			return fmt.Errorf("%s exited at start (log: %s)", r.name, r.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 20s (log: %s)", r.name, r.logPath)
		}
	}
}

// stop sends SIGTERM and waits for the exit; a second signal would have exited at once.
func (r *replica) stop(timeout time.Duration) int {
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	select {
	case <-r.done:
		return r.exitCode
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(timeout):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	return r.exitCode
}

func (f *fleet) stopAll() {
	for _, r := range f.replicas {
		r.stop(30 * time.Second)
	}
}

// rollingRestart restarts each replica in turn, rounds times, waiting for HAProxy to
// route to it again before the next.
func (f *fleet) rollingRestart(ctx context.Context, lb *testenv.HAProxy, rounds int) error {
	for round := 1; round <= rounds; round++ {
		for _, r := range f.replicas {
			if ctx.Err() != nil {
				return nil
			}
			say("restart %d/%d: SIGTERM %s", round, rounds, r.name)
			if code := r.stop(30 * time.Second); code != 0 {
				return fmt.Errorf("%s exited %d (log: %s)", r.name, code, r.logPath)
			}
			if err := r.start(ctx); err != nil {
				return err
			}
			if err := lb.WaitStatus(r.name, "UP", 10*time.Second); err != nil {
				return err
			}
			say("%s is back in rotation", r.name)
		}
	}
	return nil
}

// lifecycle is the part of /debug/lifecycle the monitor reads.
type lifecycle struct {
	Phase       string `json:"phase"`
	Entrypoints []struct {
		InFlight int `json:"in_flight"`
	} `json:"entrypoints"`
	Leadership map[string]struct {
		Held  bool   `json:"held"`
		Token uint64 `json:"token"`
	} `json:"leadership"`
}

func (r *replica) lifecycle(c *http.Client) (lifecycle, bool) {
	var lc lifecycle
	resp, err := c.Get("http://" + r.probe + "/debug/lifecycle")
	if err != nil {
		return lc, false
	}
	defer resp.Body.Close()
	return lc, json.NewDecoder(resp.Body).Decode(&lc) == nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
