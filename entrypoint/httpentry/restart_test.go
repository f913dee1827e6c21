package httpentry_test

import (
	"net/http"
	"testing"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/internal/testenv"
)

// A Server whose listener broke cannot serve again: http.Server.Serve closed it, and
// only Bind opens one. A second Serve says so with an ErrOutOfTurn error (the Host
// leaves it failed), and Drain and Stop still end it.
func TestServeAfterTheListenerBrokeIsRefused(t *testing.T) {
	ln := testenv.NewBrokenListener(t)
	s, err := httpentry.New(httpentry.Config{}, http.NotFoundHandler(), httpentry.WithListener(ln))
	if err != nil {
		t.Fatal(err)
	}
	testenv.ServeAfterBreakIsRefused(t, s, ln, entrypoint.ErrOutOfTurn)
}
