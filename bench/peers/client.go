package main

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"strconv"
	"time"
)

// client is a minimal HTTP/1.1 client for the load generator: keep-alive
// connections reused from an idle pool, one request at a time each, a new
// connection when none is idle. net/http's client costs several times the CPU per
// request, and on a small machine the generator must not be what saturates.
type client struct {
	addr string
	idle chan *conn
	req  []byte
}

type conn struct {
	c net.Conn
	r *bufio.Reader
}

func newClient(addr string) *client {
	return &client{addr: addr, idle: make(chan *conn, 8192),
		req: []byte("GET / HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: peers\r\n\r\n")}
}

func (cl *client) close() {
	for {
		select {
		case c := <-cl.idle:
			c.c.Close()
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
		nc, err := net.DialTimeout("tcp", cl.addr, time.Until(deadline))
		if err != nil {
			return 0, err
		}
		c = &conn{c: nc, r: bufio.NewReaderSize(nc, 4096)}
	}
	code, keep, err := c.roundTrip(cl.req, deadline)
	if err != nil || !keep {
		c.c.Close()
		return code, err
	}
	select {
	case cl.idle <- c:
	default:
		c.c.Close()
	}
	return code, nil
}

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
