package testenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// process is one running server. A goroutine owned by the process reaps it; every
// path that ends the process (kill, stop) waits for that goroutine through exited.
type process struct {
	cmd     *exec.Cmd
	logPath string
	logFrom int64         // size of the log when this process started
	exited  chan struct{} // closed once Wait returned
}

// spawn starts bin with its output appended to logPath, in its own process group,
// killed when the test binary dies, as cred's user when cred is not nil.
func spawn(bin string, args []string, logPath string, cred *syscall.Credential) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// An *os.File as Stdout hands the descriptor to the child directly: no copying
	// goroutine, and Wait does not hang on a grandchild holding a pipe open.
	defer f.Close()
	var from int64
	if st, err := f.Stat(); err == nil {
		from = st.Size()
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = sysProcAttr(cred)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, logPath: logPath, logFrom: from, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // the exit status of a server we stop ourselves carries nothing
		close(p.exited)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// waitExit waits up to d for the process to have exited and been reaped.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// signal sends sig to the process's group (the process leads it).
func (p *process) signal(sig syscall.Signal) error {
	if !p.running() {
		return nil
	}
	err := syscall.Kill(-p.pid(), sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// kill sends SIGKILL to the process group and waits for the process to be reaped.
func (p *process) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !p.waitExit(10 * time.Second) {
		return fmt.Errorf("pid %d did not exit 10s after SIGKILL", p.pid())
	}
	return nil
}

// stop sends sig, waits up to grace for the exit, then kills.
func (p *process) stop(sig syscall.Signal, grace time.Duration) error {
	if err := p.signal(sig); err != nil {
		return err
	}
	if p.waitExit(grace) {
		return nil
	}
	return p.kill()
}

// logTail returns the last bytes this process wrote, for error messages.
func (p *process) logTail() string { return tail(p.logPath, p.logFrom, 2048) }

func tail(path string, from, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		_, _ = f.Seek(max(from, st.Size()-n), io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}

func addrInUse(log string) bool {
	return strings.Contains(log, "Address already in use") || strings.Contains(log, "address already in use")
}

// waitAll waits up to d until none of pids is alive (a zombie counts as gone).
func waitAll(pids []int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		left := false
		for _, pid := range pids {
			if alive(pid) {
				left = true
				break
			}
		}
		if !left {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
