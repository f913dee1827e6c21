package transport

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestDefaultMaxConns(t *testing.T) {
	for soft, want := range map[int]int{1024: 384, 256: 64, 64: MinDefaultMaxConns, 4096: 1536, 1 << 20: 393216} {
		if got := maxConnsFor(soft); got != want {
			t.Errorf("maxConnsFor(%d) = %d, want %d", soft, got, want)
		}
		if left := soft - PublicListeners*maxConnsFor(soft); soft >= 256 && left < ConnReserveMin {
			t.Errorf("at %d the listeners leave %d descriptors, below %d", soft, left, ConnReserveMin)
		}
	}
	if n := DefaultMaxConns(); n < MinDefaultMaxConns {
		t.Errorf("DefaultMaxConns() = %d", n)
	}
}

// chanListener hands out the conns sent on it, so that a test can tell, under
// synctest, when Accept waits.
type chanListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}
func (l *chanListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{} }

func TestConnCap(t *testing.T) {
	t.Run("at the cap Accept waits, and takes the next connection once one closes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := NewConnCap(2, nil)
			inner := newChanListener()
			ln := c.Listener(inner)
			accepted := make(chan net.Conn)
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						close(accepted)
						return
					}
					accepted <- conn
				}
			}()
			var open []net.Conn
			for range 2 {
				server, client := net.Pipe()
				defer client.Close()
				inner.conns <- server
				open = append(open, <-accepted)
			}
			third, client := net.Pipe()
			defer client.Close()
			synctest.Wait()
			sent := make(chan struct{})
			go func() { inner.conns <- third; close(sent) }()
			time.Sleep(3 * time.Second)
			synctest.Wait()
			select {
			case <-sent:
				t.Fatal("the listener accepted a third connection at a cap of 2")
			default:
			}
			if s := c.Stats(); s.Open != 2 || s.Paused != 1 || s.Peak != 2 {
				t.Errorf("at the cap: %+v, want 2 open, paused once", s)
			}
			open[0].Close()
			open[0].Close() // a second Close frees nothing more
			if got := <-accepted; got == nil {
				t.Fatal("no third connection once one closed")
			}
			<-sent
			synctest.Wait() // the accept loop waits at the cap again
			s := c.Stats()
			if s.Open != 2 || s.Accepted != 3 || s.Paused != 2 || s.PausedFor != 3*time.Second {
				t.Errorf("after: %+v, want 2 open, 3 accepted, paused twice (the second still), 3s so far", s)
			}
			if r := c.Report(); r != "conns_max=2 conns_peak=2 accept_paused=2 paused_for=3s" {
				t.Errorf("Report() = %q", r)
			}
			ln.Close()
			if _, ok := <-accepted; ok {
				t.Error("Accept after Close")
			}
		})
	})

	t.Run("Close wakes an Accept waiting at the cap", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := NewConnCap(1, nil)
			inner := newChanListener()
			ln := c.Listener(inner)
			server, client := net.Pipe()
			defer client.Close()
			go func() { inner.conns <- server }()
			conn, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			errc := make(chan error)
			go func() { _, err := ln.Accept(); errc <- err }()
			synctest.Wait()
			ln.Close()
			if err := <-errc; !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept waiting at the cap, after Close = %v, want net.ErrClosed", err)
			}
		})
	})

	t.Run("metrics", func(t *testing.T) {
		c := NewConnCap(7, nil)
		reg := prometheus.NewRegistry()
		if err := Register(reg, c.Collectors("http")...); err != nil {
			t.Fatal(err)
		}
		want := `
# HELP servicewright_http_connections_max The public listener's connection cap (MaxConns).
# TYPE servicewright_http_connections_max gauge
servicewright_http_connections_max 7
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "servicewright_http_connections_max"); err != nil {
			t.Error(err)
		}
		if n, err := testutil.GatherAndCount(reg); err != nil || n != 4 {
			t.Errorf("%d series (%v), want 4", n, err)
		}
	})
}
