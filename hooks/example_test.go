package hooks_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/servicewright/servicewright/hooks"
)

// What a Registry holds, as the Host reads it.
func Example() {
	var reg hooks.Registry
	reg.AddPreStart("migrate", func(context.Context) error {
		fmt.Println("pre_start: migrating")
		return nil
	})
	reg.AddPreShutdown("flush-outbox", func(context.Context) error {
		return errors.New("broker unreachable")
	})
	reg.AddPreShutdown("final-event", func(context.Context) error {
		fmt.Println("pre_shutdown: final event sent")
		return nil
	})
	reg.AddDrainHook(hooks.DrainHook{Name: "close-streams", Order: 20, Run: func(_ context.Context, allowed time.Duration) error {
		fmt.Println("close-streams may take", allowed.Round(time.Second))
		return nil
	}})
	reg.AddDrainHook(hooks.DrainHook{Name: "hand-over", Order: 10, MaxDuration: 2 * time.Second,
		Run: func(_ context.Context, allowed time.Duration) error {
			fmt.Println("hand-over may take", allowed)
			return nil
		}})

	for _, k := range []hooks.Kind{hooks.PreStart, hooks.PreShutdown} {
		for _, h := range reg.Hooks(k) {
			fmt.Println(k, h.Name)
		}
	}
	for _, p := range reg.DrainHooks() { // in Order: the Host runs them so
		fmt.Println("drain hook", p.Name)
	}
	// Output:
	// pre_start migrate
	// pre_shutdown flush-outbox
	// pre_shutdown final-event
	// drain hook hand-over
	// drain hook close-streams
}
