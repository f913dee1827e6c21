package httpentry

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/servicewright/servicewright/host/hosttest"
)

// runInBubble is run for a testing/synctest bubble, where real sockets cannot be
// used: the Server listens on an in-memory hosttest.Network, and x.client and
// x.dial reach it through that network, so that every timeout of the Server, its
// drain and its clients is in virtual time and a duration the test reads is the
// code's own, not the machine's load. Call it inside the bubble.
func runInBubble(t *testing.T, cfg Config, h http.Handler, opts ...Option) *running {
	t.Helper()
	n := hosttest.NewNetwork()
	s, err := New(cfg, h, append(opts, WithListener(n.Listener()))...)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	if err := s.Bind(context.Background()); err != nil {
		t.Fatalf("Bind = %v", err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 100,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return n.DialContext(ctx) }}
	return serveAndClean(t, s, "http://hosttest", tr, n)
}
