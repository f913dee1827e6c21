package entrypoint

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// closedAt runs Spread over n items and returns when each was closed, measured from
// the call, and Spread's result.
func closedAt(ctx context.Context, n int, window time.Duration) ([]time.Duration, error) {
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = -1
	}
	start := time.Now()
	err := Spread(ctx, window, items, func(i int) { at[i] = time.Since(start) })
	return at, err
}

func TestSpread(t *testing.T) {
	t.Run("closes item i of n at i×window/n, in order, and returns nil", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			at, err := closedAt(context.Background(), 10, time.Second)
			if err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			for i, got := range at {
				if want := time.Duration(i) * 100 * time.Millisecond; got != want {
					t.Errorf("item %d closed at %v, want %v", i, got, want)
				}
			}
		})
	})

	t.Run("a window of zero closes everything at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			at, err := closedAt(context.Background(), 5, 0)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			for i, got := range at {
				if got != 0 {
					t.Errorf("item %d closed at %v, want 0", i, got)
				}
			}
		})
	})

	t.Run("no items is nil at once", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := Spread(ctx, time.Hour, []int(nil), func(int) { t.Fatal("end called") }); err != nil {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("fits before the deadline with a tail, and a finished spread is nil", func(t *testing.T) {
		for _, tc := range []struct {
			deadline time.Duration
			lastBy   time.Duration // the spread's window: deadline − min(deadline/10, 500ms)
		}{
			{deadline: 2 * time.Second, lastBy: 1800 * time.Millisecond},
			{deadline: 3 * time.Second, lastBy: 2700 * time.Millisecond},
			{deadline: 30 * time.Second, lastBy: 29500 * time.Millisecond},
		} {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
				defer cancel()
				at, err := closedAt(ctx, 4, time.Hour)
				if err != nil {
					t.Fatalf("deadline %v: err = %v, want nil", tc.deadline, err)
				}
				if want := tc.lastBy * 3 / 4; at[3] != want {
					t.Errorf("deadline %v: last closed at %v, want %v", tc.deadline, at[3], want)
				}
				// The deadline passing after the spread changes nothing.
				time.Sleep(tc.deadline)
				if ctx.Err() == nil {
					t.Fatal("deadline did not pass")
				}
			})
		}
	})

	t.Run("ctx done mid-way closes the rest at once and reports ctx.Err", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(250*time.Millisecond, cancel)
			at, err := closedAt(ctx, 10, time.Second)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			for i, got := range at {
				want := time.Duration(i) * 100 * time.Millisecond
				if i >= 3 {
					want = 250 * time.Millisecond
				}
				if got != want {
					t.Errorf("item %d closed at %v, want %v", i, got, want)
				}
			}
		})
	})

	t.Run("many items are closed in batches of one tick", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			at, err := closedAt(context.Background(), 10000, 100*time.Millisecond)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			distinct := map[time.Duration]bool{}
			for i, got := range at {
				if got < 0 {
					t.Fatalf("item %d never closed", i)
				}
				if i > 0 && got < at[i-1] {
					t.Fatalf("item %d closed before item %d", i, i-1)
				}
				distinct[got] = true
			}
			if limit := int(100*time.Millisecond/spreadTick) + 1; len(distinct) > limit {
				t.Errorf("closed at %d distinct times, want at most %d", len(distinct), limit)
			}
		})
	})
}
