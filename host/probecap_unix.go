//go:build unix

package host

import (
	"net"
	"syscall"
)

// requestWaiting reports whether c's client has already sent bytes that wait to be
// read: a probe connects and sends its request at once, an idle client sends
// nothing. It peeks without blocking and without consuming anything.
func requestWaiting(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var (
		buf [1]byte
		n   int
	)
	// Control, not Read: Read would wait for the read lock that the server's own
	// blocked Read of this connection holds.
	_ = rc.Control(func(fd uintptr) {
		n, _, _ = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n > 0
}
