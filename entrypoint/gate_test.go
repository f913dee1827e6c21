package entrypoint

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestGate(t *testing.T) {
	t.Run("zero value is open and empty", func(t *testing.T) {
		var g Gate
		if g.Closed() || g.InFlight() != 0 {
			t.Fatalf("zero Gate: Closed=%v InFlight=%d, want open and empty", g.Closed(), g.InFlight())
		}
		leave, ok := g.Enter()
		if !ok || g.InFlight() != 1 {
			t.Fatalf("Enter on zero Gate: ok=%v InFlight=%d, want admitted and 1", ok, g.InFlight())
		}
		leave()
		if g.InFlight() != 0 {
			t.Fatalf("after leave: InFlight=%d, want 0", g.InFlight())
		}
	})

	t.Run("counts concurrent entries exactly", func(t *testing.T) {
		var g Gate
		const workers, rounds = 8, 2000
		var held sync.WaitGroup
		held.Add(workers)
		release := make(chan struct{})
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				leave, ok := g.Enter() // held across the check below
				if !ok {
					t.Error("open Gate refused an Enter")
				}
				held.Done()
				for range rounds {
					l, _ := g.Enter()
					l()
				}
				<-release
				leave()
			})
		}
		held.Wait()
		if got := g.InFlight(); got < workers {
			t.Errorf("InFlight = %d while %d entries are held, want at least %d", got, workers, workers)
		}
		close(release)
		wg.Wait()
		if got := g.InFlight(); got != 0 {
			t.Fatalf("InFlight = %d after every entry left, want 0", got)
		}
	})

	t.Run("Close refuses later entries with a no-op leave", func(t *testing.T) {
		var g Gate
		admitted, _ := g.Enter()
		g.Close()
		g.Close() // idempotent
		if !g.Closed() {
			t.Fatal("Closed() = false after Close")
		}
		leave, ok := g.Enter()
		if ok || leave == nil {
			t.Fatalf("Enter after Close: ok=%v leave nil=%v, want refused with a non-nil leave", ok, leave == nil)
		}
		leave()
		leave()
		if got := g.InFlight(); got != 1 {
			t.Fatalf("InFlight = %d, want 1 (entry admitted before Close; refused leaves are no-ops)", got)
		}
		admitted()
		if got := g.InFlight(); got != 0 {
			t.Fatalf("InFlight = %d after the admitted entry left, want 0", got)
		}
	})

	t.Run("surplus leave panics and leaves the count intact", func(t *testing.T) {
		var g Gate
		leave, _ := g.Enter()
		leave()
		defer func() {
			if recover() == nil {
				t.Error("second leave did not panic")
			}
			if got := g.InFlight(); got != 0 {
				t.Errorf("InFlight = %d after the recovered panic, want 0", got)
			}
			if _, ok := g.Enter(); !ok {
				t.Error("Gate unusable after a recovered surplus leave")
			}
		}()
		leave()
	})

	t.Run("Enter and leave allocate nothing", func(t *testing.T) {
		var g Gate
		if n := testing.AllocsPerRun(1000, func() {
			leave, _ := g.Enter()
			leave()
		}); n != 0 {
			t.Fatalf("Enter+leave allocates %v times per run, want 0", n)
		}
	})
}

func TestGateWait(t *testing.T) {
	t.Run("returns at once when nothing is in flight", func(t *testing.T) {
		var g Gate
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // even a done ctx does not matter when the Gate is already empty
		if err := g.Wait(ctx); err != nil {
			t.Fatalf("Wait on an empty Gate = %v, want nil", err)
		}
	})

	t.Run("returns when the last entry leaves", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var g Gate
			first, _ := g.Enter()
			second, _ := g.Enter()
			g.Close()
			var waited atomic.Bool
			var wg sync.WaitGroup
			for range 3 { // several waiters share one wake-up
				wg.Go(func() {
					if err := g.Wait(context.Background()); err != nil {
						t.Errorf("Wait = %v, want nil", err)
					}
					waited.Store(true)
				})
			}
			synctest.Wait()
			first()
			synctest.Wait()
			if waited.Load() {
				t.Fatal("Wait returned with one entry still in flight")
			}
			time.Sleep(time.Second)
			second()
			wg.Wait()
			if elapsed := time.Since(start); elapsed != time.Second {
				t.Fatalf("Wait returned at %v of virtual time, want 1s", elapsed)
			}
		})
	})

	t.Run("returns ctx.Err when ctx expires first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var g Gate
			leave, _ := g.Enter()
			defer leave()
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Wait = %v, want context.DeadlineExceeded", err)
			}
			if d := time.Since(start); d != 5*time.Second {
				t.Fatalf("Wait gave up after %v, want 5s", d)
			}
			if g.InFlight() != 1 {
				t.Fatalf("InFlight = %d, want 1: an expired Wait leaves the work alone", g.InFlight())
			}
		})
	})

	t.Run("later waits work after an expired one", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var g Gate
			leave, _ := g.Enter()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := g.Wait(ctx); err == nil {
				t.Fatal("Wait = nil with an entry in flight")
			}
			done := make(chan error, 1)
			go func() { done <- g.Wait(context.Background()) }()
			synctest.Wait()
			leave()
			if err := <-done; err != nil {
				t.Fatalf("second Wait = %v, want nil", err)
			}
		})
	})

	t.Run("no admitted entry is still inside when Wait returns", func(t *testing.T) {
		// Stress the Close/Enter race and the last-leave/Wait race together: every
		// admitted entry must be counted, and the last leave must wake Wait.
		for round := range 200 {
			var g Gate
			var inside atomic.Int64 // entries between a successful Enter and leave
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 2 * runtime.GOMAXPROCS(0) {
				wg.Go(func() {
					<-start
					for {
						leave, ok := g.Enter()
						if !ok {
							return
						}
						inside.Add(1)
						runtime.Gosched()
						inside.Add(-1)
						leave()
					}
				})
			}
			close(start)
			for range round % 8 { // vary where Close lands
				runtime.Gosched()
			}
			g.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := g.Wait(ctx)
			n := inside.Load()
			cancel()
			wg.Wait()
			if err != nil {
				t.Fatalf("round %d: Wait = %v: lost wake-up", round, err)
			}
			if n != 0 {
				t.Fatalf("round %d: %d admitted entries still inside when Wait returned", round, n)
			}
		}
	})
}

func BenchmarkGate(b *testing.B) {
	var g Gate
	b.ReportAllocs()
	for b.Loop() {
		leave, _ := g.Enter()
		leave()
	}
}

func BenchmarkGateParallel(b *testing.B) {
	var g Gate
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			leave, _ := g.Enter()
			leave()
		}
	})
}

// BenchmarkAtomicBaseline is the floor BenchmarkGate is measured against: one atomic
// increment and one decrement, with no admission check.
func BenchmarkAtomicBaseline(b *testing.B) {
	var n atomic.Int64
	b.ReportAllocs()
	for b.Loop() {
		n.Add(1)
		n.Add(-1)
	}
}

func BenchmarkAtomicBaselineParallel(b *testing.B) {
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Add(1)
			n.Add(-1)
		}
	})
}
