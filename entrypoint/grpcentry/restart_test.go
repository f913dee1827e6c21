package grpcentry_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
)

// breaking is a loopback listener whose Accept fails for good: the socket broke.
type breaking struct {
	net.Listener
	closed atomic.Bool
}

func (l *breaking) Accept() (net.Conn, error) { return nil, errors.New("accept: the socket broke") }
func (l *breaking) Close() error {
	l.closed.Store(true)
	return l.Listener.Close()
}

// A Server whose listener broke cannot serve again: grpc.Server.Serve closed it, and
// only Bind opens one. A second Serve says so with an ErrOutOfTurn error (the Host
// leaves it failed), and Drain and Stop still end it.
func TestServeAfterTheListenerBrokeIsRefused(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &breaking{Listener: inner}
	s, err := grpcentry.New(grpcentry.Config{}, func(*grpc.Server) {}, grpcentry.WithListener(ln))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bind(t.Context()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	if err := s.Serve(t.Context(), stop); err == nil || !strings.Contains(err.Error(), "the socket broke") {
		t.Fatalf("first Serve = %v, want the listener's failure", err)
	}
	if !ln.closed.Load() {
		t.Error("the broken listener is not closed after Serve failed")
	}
	err = s.Serve(t.Context(), stop)
	if !errors.Is(err, entrypoint.ErrOutOfTurn) || !strings.Contains(err.Error(), "cannot serve again") {
		t.Fatalf("second Serve = %v, want an ErrOutOfTurn error saying it cannot serve again", err)
	}
	close(stop)
	if err := s.Drain(context.Background()); err != nil {
		t.Errorf("Drain = %v, want nil: Serve reported the failure", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("Stop = %v", err)
	}
}
