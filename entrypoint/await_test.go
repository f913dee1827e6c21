package entrypoint

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestServeUntil(t *testing.T) {
	t.Run("returns nil at stop without halting", func(t *testing.T) {
		stop, ended := make(chan struct{}), make(chan struct{})
		close(stop)
		halted := false
		if err := ServeUntil(context.Background(), stop, ended, ended, func() { halted = true }); err != nil || halted {
			t.Fatalf("err=%v halted=%v", err, halted)
		}
	})
	t.Run("returns nil when Drain or Stop ended the work first", func(t *testing.T) {
		ended := make(chan struct{})
		close(ended)
		if err := ServeUntil(context.Background(), make(chan struct{}), ended, ended, func() { t.Error("halted") }); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("halts and waits for the work when ctx gives up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			exited := make(chan struct{})
			halt := func() { go func() { time.Sleep(time.Second); close(exited) }() }
			began := time.Now()
			err := ServeUntil(ctx, make(chan struct{}), make(chan struct{}), exited, halt)
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) != 2*time.Second {
				t.Fatalf("err=%v after %s; want DeadlineExceeded after the 1s ctx and the 1s exit", err, time.Since(began))
			}
		})
	})
}

func TestAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if err := Await(context.Background(), nil); err != nil {
			t.Errorf("nil done: %v", err)
		}
		done := make(chan struct{})
		go func() { time.Sleep(time.Second); close(done) }()
		if err := Await(context.Background(), done); err != nil {
			t.Errorf("closed done: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := Await(ctx, make(chan struct{})); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ctx expiry: %v", err)
		}
	})
}
