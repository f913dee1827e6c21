package httpentry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

func TestConnSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cs connSet
		a, _ := net.Pipe()
		b, _ := net.Pipe()
		defer a.Close()
		defer b.Close()

		if err := cs.wait(context.Background()); err != nil {
			t.Fatalf("wait with no connection = %v", err)
		}
		cs.track(a, http.StateNew) // accepted, request not read yet: busy
		cs.track(b, http.StateNew)
		cs.track(b, http.StateActive)
		cs.track(b, http.StateActive) // counted once
		if n := cs.busyCount(); n != 2 {
			t.Fatalf("busy = %d, want 2", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := cs.wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait with busy connections = %v", err)
		}

		waited := make(chan time.Time, 1)
		go func() {
			if err := cs.wait(context.Background()); err != nil {
				t.Error(err)
			}
			waited <- time.Now()
		}()
		time.Sleep(time.Second)
		cs.track(a, http.StateIdle) // HTTP/1 idle: quiet
		time.Sleep(time.Second)
		start := time.Now()
		cs.track(b, http.StateClosed)
		if at := <-waited; !at.Equal(start) {
			t.Errorf("wait returned %v after the last connection went quiet, want at once", at.Sub(start))
		}
		if n := cs.busyCount(); n != 0 || len(cs.conns) != 1 {
			t.Errorf("busy = %d, tracked = %d; want 0 busy and the idle one tracked", n, len(cs.conns))
		}
		cs.track(a, http.StateClosed)
		if len(cs.conns) != 0 {
			t.Errorf("%d connections still tracked after closing", len(cs.conns))
		}
	})
}
