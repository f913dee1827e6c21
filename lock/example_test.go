package lock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/servicewright/servicewright/lock"
)

// A lease is held by one owner at a time; each new holding draws a larger fencing
// token, which a write guarded by the lock carries so that a stale holder's write
// can be refused.
func ExampleNewMemory() {
	ctx := context.Background()
	var lk lock.Lock = lock.NewMemory()

	a, err := lk.Acquire(ctx, "digest", "replica-a", 15*time.Second)
	if err != nil {
		panic(err)
	}
	_, err = lk.Acquire(ctx, "digest", "replica-b", 15*time.Second)
	fmt.Println("b while a holds it:", errors.Is(err, lock.ErrHeld))

	if err := lk.Release(ctx, a); err != nil {
		panic(err)
	}
	b, err := lk.Acquire(ctx, "digest", "replica-b", 15*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("tokens:", a.Token, b.Token)
	// Output:
	// b while a holds it: true
	// tokens: 1 2
}
