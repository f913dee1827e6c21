//go:build !linux

package httpentry

import (
	"net"
	"syscall"
)

// canAcceptQueued tells whether acceptQueued works here: it does not, so listeners
// are served as they are and closed at Drain.
const canAcceptQueued = false

func acceptQueued(syscall.RawConn) (net.Conn, error) { return nil, nil }

// readQueued reads nothing here: the requests left in the receive queue are not
// counted.
func readQueued(net.Conn, int) []byte { return nil }
