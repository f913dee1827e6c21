package grpcentry_test

import (
	"testing"

	"google.golang.org/grpc"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/internal/testenv"
)

// A Server whose listener broke cannot serve again: grpc.Server.Serve closed it, and
// only Bind opens one. A second Serve says so with an ErrOutOfTurn error (the Host
// leaves it failed), and Drain and Stop still end it.
func TestServeAfterTheListenerBrokeIsRefused(t *testing.T) {
	ln := testenv.NewBrokenListener(t)
	s, err := grpcentry.New(grpcentry.Config{}, func(*grpc.Server) {}, grpcentry.WithListener(ln))
	if err != nil {
		t.Fatal(err)
	}
	testenv.ServeAfterBreakIsRefused(t, s, ln, entrypoint.ErrOutOfTurn)
}
