package transport

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/wait"
)

var errClosed = errors.New("server closed")

func TestServing(t *testing.T) {
	t.Run("stop: Until returns nil with the server still serving", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sv := NewServing("api", "test.Server", errClosed)
			quit := make(chan struct{})
			sv.Start(func() error { <-quit; return errClosed })
			stop := make(chan struct{})
			close(stop)
			if err := sv.Until(context.Background(), stop, func() { t.Error("cut at stop") }); err != nil {
				t.Errorf("Until = %v", err)
			}
			close(quit)
			if err := sv.Wait(context.Background()); err != nil || sv.TakeErr() != nil {
				t.Errorf("Wait = %v; a closed server is no failure", err)
			}
		})
	})
	t.Run("a failure is returned once, named, and a panic is one", func(t *testing.T) {
		for _, serve := range []func() error{
			func() error { return errors.New("accept: broken") },
			func() error { panic("accept: broken") },
		} {
			sv := NewServing("api", "test.Server", errClosed)
			sv.Start(serve)
			err := sv.Until(context.Background(), make(chan struct{}), func() { t.Error("cut") })
			if err == nil || !strings.HasPrefix(err.Error(), "api: serve: ") || !strings.Contains(err.Error(), "accept: broken") {
				t.Errorf("Until = %v, want the named failure", err)
			}
			if err := sv.TakeErr(); err != nil {
				t.Errorf("TakeErr after Until = %v, want nil: reported once", err)
			}
		}
	})
	t.Run("the Host giving up cuts the server and waits for it at most wait.AbandonAfter", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			exitAfter time.Duration // after the cut
			abandoned bool
		}{
			{"it returns", wait.AbandonAfter / 2, false},
			{"it hangs", 3 * wait.AbandonAfter, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					sv := NewServing("api", "test.Server", errClosed)
					cut := make(chan struct{})
					sv.Start(func() error { <-cut; time.Sleep(tc.exitAfter); return errClosed })
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					defer cancel()
					began := time.Now()
					err := sv.Until(ctx, make(chan struct{}), func() { close(cut) })
					if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, fault.ErrAbandoned) != tc.abandoned {
						t.Errorf("Until = %v, want DeadlineExceeded, abandoned %v", err, tc.abandoned)
					}
					if tc.abandoned && !strings.Contains(err.Error(), `entrypoint "api" test.Server`) {
						t.Errorf("Until = %v, want the server named", err)
					}
					if waited, limit := time.Since(began), time.Second+wait.AbandonAfter; waited > limit {
						t.Errorf("Until waited %s, more than the ctx and wait.AbandonAfter (%s)", waited, limit)
					}
					if err := sv.Wait(context.Background()); err != nil { // the abandoned goroutine ends before the bubble does
						t.Error(err)
					}
				})
			})
		}
	})
	t.Run("Wait before Start has nothing to wait for; after, it is bounded by ctx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sv := NewServing("api", "test.Server", errClosed)
			if err := sv.Wait(context.Background()); err != nil {
				t.Errorf("Wait before Start = %v", err)
			}
			quit := make(chan struct{})
			sv.Start(func() error { <-quit; return errClosed })
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := sv.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not return") {
				t.Errorf("Wait = %v, want it to say the server did not return", err)
			}
			close(quit)
		})
	})
}

func TestBind(t *testing.T) {
	var b entrypoint.Base
	_ = b.Init("api", entrypoint.Telemetry{}, nil)
	ln, err := Bind(context.Background(), &b, nil, "127.0.0.1:0", "api")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if b.Unbound() || b.Serving() {
		t.Errorf("after Bind: unbound %v, serving %v; want bound", b.Unbound(), b.Serving())
	}
	if _, err := Bind(context.Background(), &b, nil, "127.0.0.1:0", "api"); !errors.Is(err, entrypoint.ErrOutOfTurn) {
		t.Errorf("second Bind = %v, want ErrOutOfTurn", err)
	}
	var fresh entrypoint.Base
	_ = fresh.Init("api", entrypoint.Telemetry{}, nil)
	if _, err := Bind(context.Background(), &fresh, nil, ln.Addr().(*net.TCPAddr).String(), "api"); err == nil || !fresh.Unbound() {
		t.Errorf("Bind on a taken address = %v, unbound %v; want the failure and a Base still unbound", err, fresh.Unbound())
	}
}
