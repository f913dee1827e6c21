package transport

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// CanAcceptQueued tells whether AcceptQueued works here.
const CanAcceptQueued = true

// AcceptQueued takes one connection from the listening socket's queue with a
// non-blocking accept4(2): it returns nil, nil when the queue is empty (Go's
// listening sockets are non-blocking). A connection the client aborted while queued
// is skipped.
func AcceptQueued(raw syscall.RawConn) (net.Conn, error) {
	var fd int
	var err error
	if cerr := raw.Control(func(s uintptr) {
		for {
			fd, _, err = syscall.Accept4(int(s), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
			if err != syscall.EINTR && err != syscall.ECONNABORTED {
				return
			}
		}
	}); cerr != nil {
		return nil, cerr
	}
	switch {
	case errors.Is(err, syscall.EAGAIN):
		return nil, nil
	case err != nil:
		return nil, os.NewSyscallError("accept4", err)
	}
	f := os.NewFile(uintptr(fd), "")
	c, err := net.FileConn(f) // a duplicate, registered with the runtime's poller
	f.Close()
	return c, err
}

// ReadQueued returns what is waiting in c's receive queue, at most limit bytes, with
// non-blocking read(2)s on the socket (Go's sockets are non-blocking). It does not
// take the conn's read lock, so it never waits for a Read in progress. A conn that
// is not a socket (not a syscall.Conn) gives nothing.
func ReadQueued(c net.Conn, limit int) []byte {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var out []byte
	buf := make([]byte, 4096)
	_ = raw.Control(func(fd uintptr) {
		for len(out) < limit {
			n, err := syscall.Read(int(fd), buf)
			if err == syscall.EINTR {
				continue
			}
			if n <= 0 || err != nil {
				return
			}
			out = append(out, buf[:n]...)
		}
	})
	return out
}
