//go:build unix && !linux

package testenv

import "syscall"

func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// children is unknown without /proc; PostgreSQL's children notice their parent's death.
func children(int) []int { return nil }
