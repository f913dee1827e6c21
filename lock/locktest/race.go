package locktest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/servicewright/servicewright/lock"
)

// Race has every lock of locks — each its own client of one backend, as replicas
// are — acquire key at once, rounds times: each round exactly one wins, the others
// get lock.ErrHeld and nothing else, the winner's token is above every earlier
// round's, and the winner's release frees the key for the next round. The locks
// acquire as owners "c0", "c1", … with a TTL of a minute.
func Race(t *testing.T, locks []lock.Lock, key string, rounds int) {
	t.Helper()
	ctx := context.Background()
	var last uint64
	for round := range rounds {
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			won    []lock.Lease
			winner lock.Lock
			others []error
		)
		for i, lk := range locks {
			wg.Go(func() {
				l, err := lk.Acquire(ctx, key, "c"+strconv.Itoa(i), time.Minute)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					won, winner = append(won, l), lk
				} else if !errors.Is(err, lock.ErrHeld) {
					others = append(others, err)
				}
			})
		}
		wg.Wait()
		if len(won) != 1 || len(others) != 0 {
			t.Fatalf("round %d: winners %+v, errors %v; want exactly one winner, the rest lock.ErrHeld", round, won, others)
		}
		if won[0].Token <= last {
			t.Fatalf("round %d: token %d after %d", round, won[0].Token, last)
		}
		last = won[0].Token
		if err := winner.Release(ctx, won[0]); err != nil {
			t.Fatalf("round %d: the winner's release: %v", round, err)
		}
	}
}
