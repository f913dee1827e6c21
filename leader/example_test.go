package leader_test

import (
	"context"
	"fmt"
	"time"

	"github.com/servicewright/servicewright/leader"
	"github.com/servicewright/servicewright/lock"
)

// A publisher that runs on one replica at a time: lead works in units, checks Live
// between them and stops when its term ends.
func ExampleNew() {
	lk := lock.NewMemory() // rediskit.NewLock or pgkit.NewLock across processes
	led := make(chan uint64, 1)
	l, err := leader.New(leader.Config{
		Lock:  lk,
		Key:   "digest-publisher",
		Owner: "replica-1",
		TTL:   5 * time.Second, CampaignEvery: 100 * time.Millisecond, Margin: 500 * time.Millisecond,
		YieldGrace: time.Second, ReleaseTimeout: 500 * time.Millisecond,
	}, func(ctx context.Context, term *leader.Term) error {
		led <- term.Token
		for term.Live() {
			// One unit: write the digest with fence term.Token; return if refused.
			select {
			case <-term.Ended():
				return nil
			case <-time.After(10 * time.Millisecond):
			}
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	_ = l.Bind(ctx)
	stop := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx, stop) }()

	fmt.Println("leading with token", <-led)
	close(stop) // the Host's stop: Serve returns, the term goes on
	<-served
	fmt.Println("still held:", l.Leadership()["digest-publisher"].Held)
	_ = l.Drain(ctx) // ends the term and releases the lease
	_ = l.Stop(ctx)
	fmt.Println("held after drain:", l.Leadership()["digest-publisher"].Held)

	// Output:
	// leading with token 1
	// still held: true
	// held after drain: false
}

func ExampleNew_invalid() {
	_, err := leader.New(leader.Config{Lock: lock.NewMemory(), Key: "jobs:want", Owner: "a", TTL: 3 * time.Second},
		func(context.Context, *leader.Term) error { return nil })
	fmt.Println(err)
	// Output:
	// invalid configuration (2 problems): Key: must not end in ":want", which names the handoff request lock, got "jobs:want"; TTL: RenewEvery + YieldGrace + ReleaseTimeout + Margin must be less than TTL (1s + 2s + 1s + 1s = 5s, TTL 3s)
}
