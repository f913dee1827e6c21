package wait

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
)

func TestServeUntil(t *testing.T) {
	noHalt := func(t *testing.T) func() <-chan struct{} {
		return func() <-chan struct{} { t.Error("halted"); return nil }
	}
	t.Run("returns nil at stop without halting", func(t *testing.T) {
		stop := make(chan struct{})
		close(stop)
		if err := ServeUntil(context.Background(), "work", stop, make(chan struct{}), noHalt(t)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("returns nil when Drain or Stop ended the work first", func(t *testing.T) {
		ended := make(chan struct{})
		close(ended)
		if err := ServeUntil(context.Background(), "work", make(chan struct{}), ended, noHalt(t)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("halts and waits for the work when ctx gives up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			exited := make(chan struct{})
			halt := func() <-chan struct{} {
				time.AfterFunc(AbandonAfter/2, func() { close(exited) })
				return exited
			}
			began := time.Now()
			err := ServeUntil(ctx, "work", make(chan struct{}), make(chan struct{}), halt)
			if err != context.DeadlineExceeded || time.Since(began) != time.Second+AbandonAfter/2 {
				t.Fatalf("err=%v after %s; want DeadlineExceeded alone after the 1s ctx and the exit", err, time.Since(began))
			}
		})
	})
	t.Run("abandons work that does not exit within AbandonAfter, and says so", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			never := make(chan struct{})
			defer close(never)
			began := time.Now()
			err := ServeUntil(ctx, `entrypoint "api" http.Server`, make(chan struct{}), make(chan struct{}),
				func() <-chan struct{} { return never })
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, fault.ErrAbandoned) ||
				!strings.Contains(err.Error(), `entrypoint "api" http.Server did not exit`) {
				t.Errorf("err = %v, want DeadlineExceeded and ErrAbandoned naming the work", err)
			}
			if waited := time.Since(began); waited != time.Second+AbandonAfter {
				t.Errorf("returned after %s, want the 1s ctx plus AbandonAfter", waited)
			}
		})
	})
	t.Run("a halt with nothing to wait for returns at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			halted := false
			err := ServeUntil(ctx, "work", nil, nil, func() <-chan struct{} { halted = true; return nil })
			if !errors.Is(err, context.DeadlineExceeded) || !halted {
				t.Fatalf("err=%v halted=%v", err, halted)
			}
		})
	})
}
