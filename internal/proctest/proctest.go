// Package proctest builds and runs the project's commands as real processes for
// end-to-end tests: it captures their JSON logs line by line, so a test waits for an
// event in the log instead of sleeping, and it reports their exit codes.
package proctest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles the package at pkg (e.g. "github.com/…/cmd/example") into dir, with
// the go build flags given (e.g. "-tags=devbroker"), and returns the binary's path.
func Build(dir, pkg string, flags ...string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, pkg)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w", pkg, err)
	}
	return bin, nil
}

// Proc is a running command whose stderr is read as log lines.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	code int

	mu     sync.Mutex
	lines  []string
	notify chan struct{}
	readWG sync.WaitGroup
}

// Start runs bin with env added to the test process's environment. The process is
// killed when the test ends if it is still running.
func Start(t testing.TB, bin string, env ...string) *Proc {
	t.Helper()
	return StartArgs(t, []string{bin}, env...)
}

// StartArgs is Start for a command line: argv[0] is the program, the rest its
// arguments. A test that needs arguments passes them here rather than writing a
// wrapper script: executing a file the test process has just written races any
// fork another test makes while the file is open for writing (ETXTBSY, "text file
// busy").
func StartArgs(t testing.TB, argv []string, env ...string) *Proc {
	t.Helper()
	bin := argv[0]
	p := &Proc{done: make(chan struct{}), notify: make(chan struct{})}
	p.cmd = exec.Command(bin, argv[1:]...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = io.Discard
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	p.readWG.Go(func() { p.read(stderr) })
	go func() {
		p.readWG.Wait()
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.code = 128 + int(ws.Signal())
			}
		default:
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("log of %s:\n%s", filepath.Base(bin), strings.Join(p.Lines(), "\n"))
		}
	})
	return p
}

func (p *Proc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		close(p.notify)
		p.notify = make(chan struct{})
		p.mu.Unlock()
	}
}

// Lines returns every log line so far.
func (p *Proc) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Entries returns the log lines that parse as JSON objects.
func (p *Proc) Entries() []map[string]any {
	var out []map[string]any
	for _, l := range p.Lines() {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Find returns the first JSON log entry whose fields include every key=value of
// match (values compared as fmt %v strings), or nil.
func (p *Proc) Find(match map[string]string) map[string]any {
	for _, e := range p.Entries() {
		if matches(e, match) {
			return e
		}
	}
	return nil
}

func matches(e map[string]any, match map[string]string) bool {
	for k, v := range match {
		if fmt.Sprint(e[k]) != v {
			return false
		}
	}
	return true
}

// WaitLog waits until a JSON log entry matches, the process exits, or timeout
// passes. It returns the entry or an error.
func (p *Proc) WaitLog(match map[string]string, timeout time.Duration) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		p.mu.Lock()
		ch := p.notify
		p.mu.Unlock()
		if e := p.Find(match); e != nil {
			return e, nil
		}
		select {
		case <-ch:
		case <-p.done:
			if e := p.Find(match); e != nil {
				return e, nil
			}
			return nil, fmt.Errorf("process exited (code %d) before logging %v", p.code, match)
		case <-ctx.Done():
			return nil, fmt.Errorf("no log entry %v within %s", match, timeout)
		}
	}
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Wait waits for the process to exit, at most timeout, and returns its exit code
// (128+signum when a signal killed it).
func (p *Proc) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.code, nil
	case <-time.After(timeout):
		return 0, fmt.Errorf("process still running after %s", timeout)
	}
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// PeakRSS is the exited process's peak resident set in bytes (getrusage's ru_maxrss),
// or -1 before it exits.
func (p *Proc) PeakRSS() int64 {
	select {
	case <-p.done:
	default:
		return -1
	}
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return -1
	}
	return ru.Maxrss << 10
}
