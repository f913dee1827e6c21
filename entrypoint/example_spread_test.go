package entrypoint_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
)

// A custom server's Drain closes its long-lived connections a few at a time over a
// window, so that their clients reconnect to other replicas gradually.
func ExampleSpread() {
	var conns []net.Conn // the server's open connections, oldest first
	for range 3 {
		server, client := net.Pipe()
		defer client.Close()
		conns = append(conns, server)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // the drain's grace
	defer cancel()

	closed := 0
	err := entrypoint.Spread(ctx, 30*time.Millisecond, conns, func(c net.Conn) {
		c.Close()
		closed++
	})
	fmt.Println(closed, err)
	// Output: 3 <nil>
}
