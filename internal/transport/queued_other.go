//go:build !linux

package transport

import (
	"net"
	"syscall"
)

// CanAcceptQueued tells whether AcceptQueued works here: it does not, so listeners
// are served as they are and closed at the drain.
const CanAcceptQueued = false

// AcceptQueued takes nothing here.
func AcceptQueued(syscall.RawConn) (net.Conn, error) { return nil, nil }

// ReadQueued reads nothing here: what is left in the receive queue is not counted.
func ReadQueued(net.Conn, int) []byte { return nil }
