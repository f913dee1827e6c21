package conntrack

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/transport"
)

// failAfter bounds every wait of the tests on real sockets. It is a failure
// timeout, never a stand-in for synchronisation.
const failAfter = 10 * time.Second

func TestBacklog(t *testing.T) {
	if !transport.CanAcceptQueued {
		t.Skip("no non-blocking accept(2) here")
	}
	for _, network := range []string{"tcp", "unix"} {
		t.Run("drain hands over what is queued, then closes the socket, "+network, func(t *testing.T) {
			drainQueue(t, network)
		})
	}

	t.Run("Close without drain closes the socket", func(t *testing.T) {
		ln := mustListen(t, "tcp")
		bl := takeOver(ln)
		if err := bl.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept on the socket after Close = %v, want net.ErrClosed", err)
		}
	})

	t.Run("closeSocket closes it while draining", func(t *testing.T) {
		ln := mustListen(t, "tcp")
		bl := takeOver(ln)
		bl.drain()
		if err := bl.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
		bl.closeSocket()
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept on the socket after closeSocket = %v, want net.ErrClosed", err)
		}
		select {
		case <-bl.emptied:
		default:
			t.Error("emptied not closed with the socket")
		}
	})

	t.Run("a listener it cannot take over is served as it is", func(t *testing.T) {
		ln := mustListen(t, "tcp")
		defer ln.Close()
		if bl := takeOver(tls.NewListener(ln, &tls.Config{})); bl != nil {
			t.Error("took over a TLS listener")
		}
	})
}

func mustListen(t *testing.T, network string) net.Listener {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// drainQueue checks that drain hands over the connections queued on a socket of
// network, then closes it.
func drainQueue(t *testing.T, network string) {
	ln := mustListen(t, network)
	bl := takeOver(ln)
	if bl == nil {
		t.Fatalf("takeOver(%T) = nil", ln)
	}
	defer bl.closeSocket()
	const n = 5
	for range n {
		c, err := net.DialTimeout(network, ln.Addr().String(), failAfter)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	bl.drain()
	if err := bl.Close(); err != nil { // as http.Server.Shutdown does: draining goes on
		t.Fatalf("Close = %v", err)
	}
	got := 0
	for {
		c, err := bl.Accept()
		if err != nil {
			if !errors.Is(err, errBacklogAnswered) || !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept after the queue = %v, want errBacklogAnswered wrapping net.ErrClosed", err)
			}
			break
		}
		if c.LocalAddr().Network() != network {
			t.Errorf("accepted a %s connection, want %s", c.LocalAddr().Network(), network)
		}
		c.Close()
		got++
		if got > n {
			t.Fatalf("Accept returned more than the %d queued connections", n)
		}
	}
	// Each dial returned once the kernel had queued its connection.
	if got != n || bl.taken.Load() != n {
		t.Errorf("accepted %d connections after Close (taken %d), want the %d queued", got, bl.taken.Load(), n)
	}
	if c, err := net.DialTimeout(network, ln.Addr().String(), failAfter); err == nil {
		c.Close()
		t.Error("the socket still accepts connections after the queue was emptied")
	}
}

// Lines sent on connections still queued in the kernel when the drain begins are
// answered, each followed by the goodbye; none is reset.
func TestDrainAnswersTheBacklog(t *testing.T) {
	if !transport.CanAcceptQueued {
		t.Skip("no non-blocking accept(2) here")
	}
	const n = 16
	tr := newTracker(t, Config{Name: "lines", Goodbye: []byte("bye\n")})
	ln := tr.Listener(mustListen(t, "tcp"))
	release := make(chan struct{})
	s := &lineServer{ln: ln, idled: make(chan struct{}, 1)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		// One connection accepted, then the loop holds until the drain began, so
		// that the others wait in the kernel's queue.
		c, err := ln.AcceptConn()
		if err != nil {
			t.Error(err)
			return
		}
		s.wg.Go(func() { s.handle(c) })
		<-release
		s.serve()
	}()
	first := dialLine(t, ln.Addr())
	if got := askLine(t, first, "first"); got != "ok first\n" {
		t.Fatalf("first = %q", got)
	}
	<-s.idled // the first connection is idle before the drain: Drain closes it as such
	queued := make([]*bufio.ReadWriter, n)
	for i := range queued {
		queued[i] = dialLine(t, ln.Addr())
		queued[i].WriteString("queued\n")
		if err := queued[i].Flush(); err != nil {
			t.Fatal(err)
		}
	}
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), failAfter)
		defer cancel()
		drained <- tr.Drain(ctx)
	}()
	select {
	case <-ln.backlog.drainBegan:
	case <-time.After(failAfter):
		t.Fatal("the drain did not begin")
	}
	close(release)

	for i, c := range append(queued, first) {
		want := "ok queued\nbye\n"
		if c == first {
			want = "bye\n"
		}
		got, err := io.ReadAll(c)
		if string(got) != want || err != nil {
			t.Errorf("connection %d read %q, %v; want %q then the end", i, got, err, want)
		}
	}
	if err := <-drained; err != nil {
		t.Errorf("Drain = %v", err)
	}
	<-served
	st := tr.Stats()
	if st.BacklogAnswered != n || st.ClosedAfterAnswer != n || st.ClosedIdle != 1 {
		t.Errorf("Stats = %+v, want %d from the backlog, each closed after its answer, 1 idle closed", st, n)
	}
}

func dialLine(t *testing.T, addr net.Addr) *bufio.ReadWriter {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), failAfter)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(failAfter))
	t.Cleanup(func() { c.Close() })
	return bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c))
}

func askLine(t *testing.T, rw *bufio.ReadWriter, line string) string {
	t.Helper()
	rw.WriteString(line + "\n")
	if err := rw.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := rw.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return got
}
