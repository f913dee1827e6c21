package hosttest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// Network is an in-memory network for one listener, for testing a network entrypoint
// inside a testing/synctest bubble, where real sockets cannot be used: every blocked
// read, write, Accept and Dial is durably blocking, so virtual time advances past them.
//
// Give Listener to the entrypoint (httpentry.WithListener, grpcentry.WithListener, or
// a custom entrypoint's own field) and reach it with Dial, DialContext or Client.
// Each connection is a net.Pipe: synchronous and unbuffered, with deadlines. A Network
// must be created inside the bubble that uses it; the zero value is not usable.
//
// A Network does not model a backlog: a Dial waits until the listener accepts it, as
// if the kernel queue were empty, and fails once the listener is closed with an error
// that is net.ErrClosed, as Accept's is. It has no notion of addresses beyond the fixed ones Addr reports.
type Network struct {
	ln *memListener
}

// NewNetwork returns a Network whose listener accepts nothing until it is served.
func NewNetwork() *Network {
	return &Network{ln: &memListener{
		conns:  make(chan net.Conn),
		closed: make(chan struct{}),
	}}
}

// Listener returns the Network's listener. It may be served once; Close stops it.
func (n *Network) Listener() net.Listener { return n.ln }

// Dial connects to the listener. It is DialContext with context.Background.
func (n *Network) Dial() (net.Conn, error) { return n.DialContext(context.Background()) }

// DialContext connects to the listener and returns the client's end. It blocks until
// the listener accepts, ctx is done or the listener is closed.
func (n *Network) DialContext(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case n.ln.conns <- &memConn{Conn: server, local: serverAddr, remote: clientAddr}:
		return &memConn{Conn: client, local: clientAddr, remote: serverAddr}, nil
	case <-n.ln.closed:
		client.Close()
		server.Close()
		return nil, fmt.Errorf("hosttest: dial: network closed: %w", net.ErrClosed)
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

// Client returns an HTTP client whose every connection is dialled on the Network,
// whatever the URL's host. Its idle connections are closed by CloseIdleConnections;
// close them before the test ends, or goleak sees their goroutines.
func (n *Network) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return n.DialContext(ctx)
		},
		ForceAttemptHTTP2: false,
	}}
}

var (
	serverAddr = memAddr("hosttest-server:0")
	clientAddr = memAddr("hosttest-client:0")
)

type memAddr string

func (a memAddr) Network() string { return "memory" }
func (a memAddr) String() string  { return string(a) }

// memConn gives a net.Pipe end the addresses a server logs.
type memConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.remote }

type memListener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

// Accept waits for the next Dial, or returns net.ErrClosed once the listener is
// closed, as a closed TCP listener would, so servers treat it as a normal stop.
func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and every Dial still waiting. Connections already accepted stay
// open.
func (l *memListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *memListener) Addr() net.Addr { return serverAddr }
