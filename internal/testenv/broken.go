package testenv

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// ErrSocketBroke is what a BrokenListener's Accept returns.
var ErrSocketBroke = errors.New("accept: the socket broke")

// A BrokenListener is a loopback listener whose Accept fails for good, as when the
// socket broke; Closed reports whether the server closed it.
type BrokenListener struct {
	net.Listener
	closed atomic.Bool
}

// NewBrokenListener returns a BrokenListener on a loopback port, closed when t ends.
func NewBrokenListener(t testing.TB) *BrokenListener {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &BrokenListener{Listener: inner}
	t.Cleanup(func() { _ = inner.Close() })
	return l
}

// Accept fails with ErrSocketBroke.
func (l *BrokenListener) Accept() (net.Conn, error) { return nil, ErrSocketBroke }

// Close records the close and closes the socket.
func (l *BrokenListener) Close() error {
	l.closed.Store(true)
	return l.Listener.Close()
}

// Closed reports whether Close was called.
func (l *BrokenListener) Closed() bool { return l.closed.Load() }

// A Server is the lifecycle of a network entrypoint (entrypoint.Entrypoint's
// methods; testenv cannot import entrypoint, whose own tests import testenv).
type Server interface {
	Bind(ctx context.Context) error
	Serve(ctx context.Context, stop <-chan struct{}) error
	Drain(ctx context.Context) error
	Stop(ctx context.Context) error
}

// ServeAfterBreakIsRefused checks a server built on ln: its first Serve fails with
// the listener's error and closes ln; a second Serve is refused with an error that
// is outOfTurn (entrypoint.ErrOutOfTurn) and says it cannot serve again, since only
// Bind opens a listener; Drain and Stop then return nil.
func ServeAfterBreakIsRefused(t *testing.T, s Server, ln *BrokenListener, outOfTurn error) {
	t.Helper()
	if err := s.Bind(t.Context()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	if err := s.Serve(t.Context(), stop); !errors.Is(err, ErrSocketBroke) && (err == nil || !strings.Contains(err.Error(), ErrSocketBroke.Error())) {
		t.Fatalf("first Serve = %v, want the listener's failure", err)
	}
	if !ln.Closed() {
		t.Error("the broken listener is not closed after Serve failed")
	}
	err := s.Serve(t.Context(), stop)
	if !errors.Is(err, outOfTurn) || !strings.Contains(err.Error(), "cannot serve again") {
		t.Fatalf("second Serve = %v, want an error that is %v and says it cannot serve again", err, outOfTurn)
	}
	close(stop)
	if err := s.Drain(context.Background()); err != nil {
		t.Errorf("Drain = %v, want nil: Serve reported the failure", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("Stop = %v", err)
	}
}
