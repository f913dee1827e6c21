//go:build unix

package transport

import "syscall"

// nofileLimit is RLIMIT_NOFILE's soft limit, at most 1<<20; 4096 if it cannot be read.
func nofileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 4096
	}
	return int(min(uint64(rl.Cur), 1<<20))
}
