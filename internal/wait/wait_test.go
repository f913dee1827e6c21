package wait

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSleep(t *testing.T) {
	t.Run("waits d and reports true", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			if !Sleep(time.Second, nil) || time.Since(start) != time.Second {
				t.Fatalf("slept %v", time.Since(start))
			}
		})
	})
	t.Run("ends as soon as quit closes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			quit := make(chan struct{})
			time.AfterFunc(300*time.Millisecond, func() { close(quit) })
			start := time.Now()
			if Sleep(time.Hour, quit) || time.Since(start) != 300*time.Millisecond {
				t.Fatalf("Sleep ended after %v", time.Since(start))
			}
		})
	})
	t.Run("a closed quit wins over a zero wait", func(t *testing.T) {
		quit := make(chan struct{})
		close(quit)
		if Sleep(0, quit) {
			t.Fatal("Sleep(0, closed) = true")
		}
		if !Sleep(0, nil) {
			t.Fatal("Sleep(0, nil) = false")
		}
	})
	t.Run("SleepCtx ends with its ctx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if SleepCtx(ctx, time.Hour) {
				t.Fatal("SleepCtx outlived its ctx")
			}
			if !SleepCtx(context.Background(), time.Millisecond) {
				t.Fatal("SleepCtx without a deadline did not sleep")
			}
		})
	})
}

func TestSleepOrWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wake := make(chan struct{}, 1)
		start := time.Now()
		if ok, woken := SleepOrWake(time.Second, nil, wake); !ok || woken || time.Since(start) != time.Second {
			t.Fatalf("without a notice: ok=%v woken=%v after %v", ok, woken, time.Since(start))
		}
		time.AfterFunc(200*time.Millisecond, func() { wake <- struct{}{} })
		start = time.Now()
		if ok, woken := SleepOrWake(time.Hour, nil, wake); !ok || !woken || time.Since(start) != 200*time.Millisecond {
			t.Fatalf("with a notice: ok=%v woken=%v after %v", ok, woken, time.Since(start))
		}
		wake <- struct{}{}
		if ok, woken := SleepOrWake(0, nil, wake); !ok || woken || len(wake) != 1 {
			t.Fatalf("a zero wait: ok=%v woken=%v, notice taken: %v", ok, woken, len(wake) == 0)
		}
		quit := make(chan struct{})
		close(quit)
		if ok, _ := SleepOrWake(time.Hour, quit, wake); ok {
			t.Fatal("a closed quit did not win over a pending notice")
		}
	})
}

func TestForAndAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		if For(done, 100*time.Millisecond) {
			t.Fatal("For reported an open channel closed")
		}
		time.AfterFunc(time.Second, func() { close(done) })
		start := time.Now()
		if !For(done, time.Hour) || time.Since(start) != time.Second {
			t.Fatalf("For = false or took %v", time.Since(start))
		}
		if !For(done, 0) {
			t.Fatal("For(closed, 0) = false")
		}

		if err := Await(context.Background(), nil); err != nil {
			t.Fatalf("Await(nil) = %v", err)
		}
		if err := Await(context.Background(), done); err != nil {
			t.Fatalf("Await(closed) = %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := Await(ctx, make(chan struct{})); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Await past its ctx = %v", err)
		}
		for range 100 { // a select between two ready cases would pick ctx half the time
			if err := Await(ctx, done); err != nil {
				t.Fatalf("Await(closed) with its ctx done = %v", err)
			}
		}
	})
}

func TestBackoff(t *testing.T) {
	t.Run("each wait is in the upper half of a doubling step, capped", func(t *testing.T) {
		b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
		steps := []time.Duration{100, 200, 400, 800, 1000, 1000}
		for i, step := range steps {
			step *= time.Millisecond
			if w := b.Next(); w < step/2 || w > step {
				t.Errorf("wait %d = %v, want within [%v, %v]", i, w, step/2, step)
			}
		}
		b.Reset()
		if w := b.Next(); w < 50*time.Millisecond || w > 100*time.Millisecond {
			t.Errorf("after Reset wait = %v, want within [50ms, 100ms]", w)
		}
	})
	t.Run("never overflows", func(t *testing.T) {
		b := Backoff{Initial: math.MaxInt64 / 2, Max: math.MaxInt64}
		for range 5 {
			if w := b.Next(); w < 0 {
				t.Fatalf("wait = %v", w)
			}
		}
	})
	t.Run("the zero Backoff waits nothing", func(t *testing.T) {
		var b Backoff
		if w := b.Next(); w != 0 {
			t.Fatalf("wait = %v", w)
		}
	})
}

func TestJitter(t *testing.T) {
	for range 1000 {
		if j := Jitter(time.Second, 100*time.Millisecond); j < 900*time.Millisecond || j > 1100*time.Millisecond {
			t.Fatalf("Jitter = %v, want within 1s ± 100ms", j)
		}
		if j := Jitter(10*time.Millisecond, time.Second); j < 0 {
			t.Fatalf("Jitter = %v, want clamped at 0", j)
		}
	}
	if j := Jitter(time.Second, 0); j != time.Second {
		t.Fatalf("Jitter without jitter = %v", j)
	}
	if j := Jitter(math.MaxInt64, math.MaxInt64); j < 0 {
		t.Fatalf("Jitter = %v, want clamped below MaxInt64", j)
	}
}

func TestGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group
		if err := g.Wait(context.Background()); err != nil {
			t.Fatalf("Wait on an empty Group = %v", err)
		}
		release := make(chan struct{})
		for range 3 {
			g.Go(func() { <-release })
		}
		if n := g.Running(); n != 3 {
			t.Fatalf("Running = %d", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait with goroutines running = %v", err)
		}
		time.AfterFunc(time.Second, func() { close(release) })
		start := time.Now()
		if err := g.Wait(context.Background()); err != nil || time.Since(start) != time.Second {
			t.Fatalf("Wait = %v after %v", err, time.Since(start))
		}
		if n := g.Running(); n != 0 {
			t.Fatalf("Running after Wait = %d", n)
		}

		exit := g.Track() // a goroutine started by someone else
		go func() {
			defer exit()
			time.Sleep(time.Second)
		}()
		start = time.Now()
		if err := g.Wait(context.Background()); err != nil || time.Since(start) != time.Second {
			t.Fatalf("Wait for a tracked goroutine = %v after %v", err, time.Since(start))
		}
		exit() // a second call changes nothing
		if n := g.Running(); n != 0 {
			t.Fatalf("Running after a second exit = %d", n)
		}
	})
}
