package conntrack_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/servicewright/servicewright/entrypoint/conntrack"
)

// A line protocol served through a Tracker: each connection is busy from its
// request's first byte until the answer (Conn.Idle), and Drain answers what was
// asked, then says goodbye to the idle connections and closes them.
func ExampleTracker() {
	tr, err := conntrack.New(conntrack.Config{Name: "upper", Goodbye: []byte("bye\n")})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	l := tr.Listener(ln)
	var wg sync.WaitGroup
	wg.Go(func() { // the entrypoint's Serve: accept until the drain closes the socket
		for {
			c, err := l.AcceptConn()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					fmt.Fprint(c, strings.ToUpper(line))
					c.Idle() // answered: the connection may be closed by a drain now
				}
			})
		}
	})

	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	fmt.Fprint(client, "hello\n")
	answers := bufio.NewReader(client)
	answer, _ := answers.ReadString('\n')
	fmt.Print(answer)

	fmt.Println("drain:", tr.Drain(context.Background())) // the entrypoint's Drain
	goodbye, _ := answers.ReadString('\n')
	fmt.Print(goodbye)
	fmt.Println("stop:", tr.Close()) // the entrypoint's Stop
	wg.Wait()
	// Output:
	// HELLO
	// drain: <nil>
	// bye
	// stop: <nil>
}
