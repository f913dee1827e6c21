package host_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/conntrack"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
)

// lines is a custom entrypoint: a TCP server that answers each line with the line
// in upper case, on entrypoint.Runner and a conntrack.Tracker. The README shows
// this code.
type lines struct {
	*entrypoint.Runner                    // the guard, the accept goroutine, InFlight
	conns              *conntrack.Tracker // busy/idle per connection, the backlog, the goodbye
	addr               string
	ln                 net.Listener // given, or opened by Bind
	tl                 *conntrack.Listener
}

func newLines(addr string, ln net.Listener) (*lines, error) {
	conns, err := conntrack.New(conntrack.Config{Name: "lines", Goodbye: []byte("BYE server going away\n")})
	if err != nil {
		return nil, err
	}
	return &lines{Runner: entrypoint.NewRunner("lines"), conns: conns, addr: addr, ln: ln}, nil
}

func (l *lines) Name() string { return "lines" }

func (l *lines) Bind(ctx context.Context) error {
	return l.Runner.Bind(ctx, func(ctx context.Context) error {
		if l.ln == nil {
			ln, err := new(net.ListenConfig).Listen(ctx, "tcp", l.addr)
			if err != nil {
				return err
			}
			l.ln = ln
		}
		l.tl = l.conns.Listener(l.ln)
		return nil
	})
}

func (l *lines) Serve(ctx context.Context, stop <-chan struct{}) error {
	return l.Runner.Serve(ctx, stop, l.accept) // returns at stop; accepting goes on until Drain
}

// Drain answers every line read and the connections still queued in the kernel,
// tells each idle connection goodbye, then waits for the handlers to return.
func (l *lines) Drain(ctx context.Context) error {
	return errors.Join(l.conns.Drain(ctx), l.Runner.Drain(ctx))
}

// Stop cuts what the drain left: every connection is closed, then the Runner stops.
func (l *lines) Stop(ctx context.Context) error {
	l.conns.Close()
	return l.Runner.Stop(ctx)
}

func (l *lines) DrainReport() string { return l.conns.Report() }

// accept serves each connection in a goroutine counted by the Runner's Gate, until
// the drain has answered the backlog and closed the listener.
func (l *lines) accept(ctx context.Context, draining <-chan struct{}) error {
	for {
		c, err := l.tl.AcceptConn()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		leave, _ := l.Gate().Enter() // open until the accept loop returned
		go func() {
			defer leave()
			l.handle(c)
		}()
	}
}

// handle answers each line. The connection is busy from the moment a line's bytes
// arrive (Read marks it) until Idle, after the answer: the drain waits for it then,
// and closes it, with the goodbye, once it is idle.
func (l *lines) handle(c *conntrack.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		c.SetReadDeadline(time.Now().Add(time.Minute)) // a client that sends nothing is closed
		line, err := br.ReadString('\n')
		if err != nil {
			return // the client left, the deadline passed, or the drain closed it
		}
		if _, err := io.WriteString(c, strings.ToUpper(line)); err != nil {
			return
		}
		if br.Buffered() == 0 {
			c.Idle() // answered, and nothing more read: the drain may close it now
		}
	}
}

// The lines server answers a line, and at the stop its idle client is told goodbye.
func Example_customEntrypoint() {
	srv, err := newLines("127.0.0.1:0", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	lc := &hooks.Registry{}
	ctx, stop := context.WithCancel(context.Background())
	client := make(chan struct{})
	lc.AddPostStart("demo", func(context.Context) error {
		c, err := net.Dial("tcp", srv.tl.Addr().String())
		if err != nil {
			return err
		}
		go func() {
			defer close(client)
			defer c.Close()
			br := bufio.NewReader(c)
			fmt.Fprintln(c, "hello")
			answer, _ := br.ReadString('\n')
			fmt.Print(answer)
			stop() // as SIGTERM would
			bye, _ := br.ReadString('\n')
			fmt.Print(bye)
		}()
		return nil
	})
	err = host.Run(ctx, host.AppSpec{
		ServiceName: "lines",
		Entrypoints: []host.Registration{{Entrypoint: srv}},
		Lifecycle:   lc,
		Probes:      health.ListenerConfig{Addr: "127.0.0.1:0"},
		Telemetry:   host.TelemetryConfig{Logger: zap.NewNop()},
	})
	<-client
	fmt.Println("exit code", host.ExitCode(err))
	st := srv.conns.Stats()
	fmt.Println("connections told goodbye:", st.ClosedIdle+st.ClosedAfterAnswer)
	// Output:
	// HELLO
	// BYE server going away
	// exit code 0
	// connections told goodbye: 1
}
