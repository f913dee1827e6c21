package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/telemetry"
)

// pipedExample is the example with its stderr on a pipe the test holds both ends
// of, so that the test can stop reading it or close it.
type pipedExample struct {
	cmd       *exec.Cmd
	r, w      *os.File
	lines     *bufio.Reader
	exited    chan struct{}
	code      int
	probe     string
	http      string
	worstCase time.Duration // from the "shutdown budget" line
}

// startPiped starts the example and reads its log until "service ready".
func startPiped(t *testing.T, env ...string) *pipedExample {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &pipedExample{r: r, w: w, lines: bufio.NewReaderSize(r, 1<<20), exited: make(chan struct{}),
		probe: freeAddr(t), http: freeAddr(t)}
	p.cmd = exec.Command(bin)
	p.cmd.Env = append(os.Environ(), append([]string{"PROBE_ADDR=" + p.probe, "HTTP_ADDR=" + p.http,
		"GRPC_ADDR=127.0.0.1:0", "SW_LOG_LEVEL=debug", "SW_LOG_FORMAT=json"}, env...)...)
	p.cmd.Stderr = w
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			p.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.code = 128 + int(ws.Signal())
			}
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		r.Close()
		w.Close()
	})
	deadline := time.AfterFunc(60*time.Second, func() { _ = p.cmd.Process.Kill() })
	defer deadline.Stop()
	for {
		line, err := p.lines.ReadBytes('\n')
		if err != nil {
			t.Fatalf("the example's log ended before it was ready: %v", err)
		}
		var e map[string]any
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		switch e["msg"] {
		case "shutdown budget":
			p.worstCase = durationField(t, e["worst_case"+telemetry.DurationSuffix])
		case "service ready":
			return p
		}
	}
}

// durationField reads a duration logged as a number of seconds.
func durationField(t *testing.T, v any) time.Duration {
	t.Helper()
	s, ok := v.(float64)
	if !ok {
		t.Fatalf("not a number of seconds: %v", v)
	}
	return time.Duration(s * float64(time.Second))
}

// traffic sends requests to the HTTP port until stop, and counts the answers.
func traffic(addr string, stop <-chan struct{}, wg *sync.WaitGroup, ok, other *atomic.Int64) {
	client := &http.Client{Timeout: 2 * time.Second}
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Get("http://" + addr + "/hello")
				if err != nil {
					other.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok.Add(1)
				} else {
					other.Add(1)
				}
			}
		})
	}
}

// TestLogDestination: the log destination stops reading (a pipe nobody reads, filled
// to the brim) or goes away (its reader closed) while the example serves traffic.
// SIGTERM still withdraws readiness at once, drains and exits 0 within the worst case
// the example logged at start; nothing hangs. On a process that writes its log
// synchronously, the first stalls the signal handler (no stop, /readyz stays 200,
// only SIGKILL ends it) and the second kills the process with SIGPIPE (141).
func TestLogDestination(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause func(t *testing.T, p *pipedExample) func()
	}{
		{"a reader that stops reading", func(t *testing.T, p *pipedExample) func() {
			// Fill the pipe: the filler blocks once it is full, and ends with an error
			// when the test closes the reader.
			var wg sync.WaitGroup
			wg.Go(func() {
				junk := make([]byte, 1<<20)
				_, _ = p.w.Write(junk)
			})
			return func() { p.r.Close(); wg.Wait() }
		}},
		{"a reader that goes away", func(t *testing.T, p *pipedExample) func() {
			p.r.Close()
			return func() {}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPiped(t, "SW_DRAIN_DELAY=1s")
			var (
				wg        sync.WaitGroup
				ok, other atomic.Int64
			)
			stop := make(chan struct{})
			traffic(p.http, stop, &wg, &ok, &other)
			defer func() { close(stop); wg.Wait() }()
			undo := tc.cause(t, p)
			defer undo()

			// Requests go on while the log is stuck: a handler never waits on it.
			before := ok.Load()
			probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			for waited := time.Now(); ok.Load() < before+20; {
				if time.Since(waited) > 10*time.Second {
					t.Fatalf("requests stopped being answered with the log stuck: %d answered 200, %d not", ok.Load(), other.Load())
				}
				if resp, err := probe.Get("http://" + p.probe + "/livez"); err != nil || resp.StatusCode != 200 {
					t.Fatalf("/livez with the log stuck: %v %v", resp, err)
				}
			}

			began := time.Now()
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			answered, refused := ok.Load(), other.Load()
			var withdrawn time.Duration
			for withdrawn == 0 {
				resp, err := probe.Get("http://" + p.probe + "/readyz")
				switch {
				case err == nil && resp.StatusCode == http.StatusServiceUnavailable:
					withdrawn = time.Since(began)
				case time.Since(began) > 10*time.Second:
					t.Fatalf("/readyz still %v %v 10s after SIGTERM", resp, err)
				}
				if resp != nil {
					resp.Body.Close()
				}
			}
			// The exit within the logged worst case is the host package's to hold, in
			// virtual time (bounded_test.go, prestop_budget_test.go); across a process
			// boundary on a loaded machine, the worst case plus a sanity slack.
			limit := p.worstCase + 10*time.Second
			select {
			case <-p.exited:
			case <-time.After(limit):
				t.Fatalf("no exit %s after SIGTERM (worst case logged: %s)", limit, p.worstCase)
			}
			took := time.Since(began)
			if p.code != 0 {
				t.Fatalf("exit %d, want 0", p.code)
			}
			t.Logf("%s: readiness withdrawn %s after SIGTERM, exit 0 after %s (worst case %s); before SIGTERM %d requests answered 200, %d not",
				tc.name, withdrawn.Round(time.Millisecond), took.Round(time.Millisecond), p.worstCase, answered, refused)
		})
	}
}
