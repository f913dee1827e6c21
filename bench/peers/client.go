package main

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"strconv"
	"time"
)

// client is a minimal HTTP/1.1 client for the load generator: at most maxConns
// keep-alive connections, one request at a time each, reused from an idle pool; a
// request that finds none idle and the pool full waits for one (as wrk2 does: its
// latency still counts from its scheduled instant). net/http's client costs several
// times the CPU per request, and a client that dials without bound turns a slow
// server into a storm of SYNs the kernel's accept queue drops (each retried a second
// later), which measures the kernel rather than the server.
type client struct {
	addr  string
	idle  chan *conn
	slots chan struct{} // one per open connection
	req   []byte
}

// maxConns bounds the generator's connections.
const maxConns = 512

type conn struct {
	c net.Conn
	r *bufio.Reader
}

func newClient(addr string) *client {
	return &client{addr: addr, idle: make(chan *conn, maxConns), slots: make(chan struct{}, maxConns),
		req: []byte("GET / HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: peers\r\n\r\n")}
}

func (cl *client) close() {
	for {
		select {
		case c := <-cl.idle:
			c.c.Close()
			<-cl.slots
		default:
			return
		}
	}
}

var errMalformed = errors.New("malformed response")

// do sends one GET and returns the response's status code; deadline bounds the
// whole exchange.
func (cl *client) do(deadline time.Time) (int, error) {
	var c *conn
	select {
	case c = <-cl.idle:
	default:
		select {
		case c = <-cl.idle:
		case cl.slots <- struct{}{}:
			nc, err := net.DialTimeout("tcp", cl.addr, time.Until(deadline))
			if err != nil {
				<-cl.slots
				return 0, err
			}
			c = &conn{c: nc, r: bufio.NewReaderSize(nc, 4096)}
		case <-time.After(time.Until(deadline)):
			return 0, errNoConn
		}
	}
	code, keep, err := c.roundTrip(cl.req, deadline)
	if err != nil || !keep {
		c.c.Close()
		<-cl.slots
		return code, err
	}
	cl.idle <- c // never blocks: at most maxConns exist
	return code, nil
}

var errNoConn = errors.New("no connection free before the deadline")

func (c *conn) roundTrip(req []byte, deadline time.Time) (code int, keep bool, err error) {
	c.c.SetDeadline(deadline)
	if _, err := c.c.Write(req); err != nil {
		return 0, false, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	if len(line) < 12 {
		return 0, false, errMalformed
	}
	code, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, errMalformed
	}
	length, keep := -1, true
	for {
		h, err := c.r.ReadSlice('\n')
		if err != nil {
			return code, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, _ := bytes.Cut(h, []byte(":"))
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			length, _ = strconv.Atoi(string(v))
		case bytes.EqualFold(k, []byte("Connection")) && bytes.EqualFold(v, []byte("close")):
			keep = false
		}
	}
	if length < 0 {
		return code, false, errMalformed // every server here sends Content-Length
	}
	if _, err := c.r.Discard(length); err != nil {
		return code, false, err
	}
	return code, keep, nil
}
