package e2e

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestSlowClientsAtTheCapDrain: under a descriptor limit of 1024 (prlimit; the HTTP
// cap is 384), 1,500 clients each open a connection and send half a request head,
// then nothing. At SIGTERM most of them wait in the listen backlog, which the drain
// answers as places free up: the connections it takes from there may read for
// conntrack's BacklogReadTimeout (1 s) only, so the queue is worked through a
// second per cap's worth rather than once per ReadHeaderTimeout (5 s each), and the
// stop exits 0 within its drain window (14 s here: without that limit the drain
// takes the 5 s of the connections already accepted plus three 5 s rounds, and
// overruns).
func TestSlowClientsAtTheCapDrain(t *testing.T) {
	const limit, clients = 1024, 1500
	p, httpAddr, _ := startUnderNofile(t, limit, clients, "SW_DRAIN_GRACE=14s")

	conns := make([]net.Conn, 0, clients)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range clients {
		c, err := net.DialTimeout("tcp", httpAddr, 5*time.Second)
		if err != nil {
			t.Fatalf("client %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET /hello HTTP/1.1\r\n"); err != nil {
			t.Fatalf("client %d: %v", len(conns), err)
		}
	}
	mustLog(t, p, map[string]string{"msg": "connection cap reached: not accepting until a connection closes; new ones wait in the listen backlog",
		"entrypoint": "http"}, 10*time.Second)

	began := time.Now()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait(60 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rep := p.Find(map[string]string{"msg": "shutdown report"})
	t.Logf("SIGTERM to exit %d: %s; shutdown report: result %v, drain %v, overran %v, http drain: %s",
		code, time.Since(began).Round(time.Millisecond), rep["result"], rep["drain"], rep["overran"], drainDetail(rep, "http"))
	if code != 0 || rep["result"] != "success" {
		t.Fatalf("exit %d, shutdown report %v; want 0 and success with %d slow clients at the cap", code, rep, clients)
	}
}
