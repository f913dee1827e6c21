package wait

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestServeUntil(t *testing.T) {
	noHalt := func(t *testing.T) func() <-chan struct{} {
		return func() <-chan struct{} { t.Error("halted"); return nil }
	}
	t.Run("returns nil at stop without halting", func(t *testing.T) {
		stop := make(chan struct{})
		close(stop)
		if err := ServeUntil(context.Background(), stop, make(chan struct{}), noHalt(t)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("returns nil when Drain or Stop ended the work first", func(t *testing.T) {
		ended := make(chan struct{})
		close(ended)
		if err := ServeUntil(context.Background(), make(chan struct{}), ended, noHalt(t)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("halts and waits for the work when ctx gives up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			exited := make(chan struct{})
			halt := func() <-chan struct{} {
				time.AfterFunc(time.Second, func() { close(exited) })
				return exited
			}
			began := time.Now()
			err := ServeUntil(ctx, make(chan struct{}), make(chan struct{}), halt)
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) != 2*time.Second {
				t.Fatalf("err=%v after %s; want DeadlineExceeded after the 1s ctx and the 1s exit", err, time.Since(began))
			}
		})
	})
	t.Run("a halt with nothing to wait for returns at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			halted := false
			err := ServeUntil(ctx, nil, nil, func() <-chan struct{} { halted = true; return nil })
			if !errors.Is(err, context.DeadlineExceeded) || !halted {
				t.Fatalf("err=%v halted=%v", err, halted)
			}
		})
	})
}
