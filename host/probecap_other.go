//go:build !unix

package host

import "net"

// requestWaiting cannot peek here: every connection is treated alike.
func requestWaiting(net.Conn) bool { return false }
