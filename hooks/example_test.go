package hooks_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/servicewright/servicewright/hooks"
)

// The Host's use of a Registry, in the order of its sequence.
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
	reg.AddDrainPhase(hooks.DrainPhase{Name: "close-streams", Order: 20, Run: func(_ context.Context, allowed time.Duration) error {
		fmt.Println("close-streams may take", allowed.Round(time.Second))
		return nil
	}})
	reg.AddDrainPhase(hooks.DrainPhase{Name: "hand-over", Order: 10, MaxDuration: 2 * time.Second,
		Run: func(_ context.Context, allowed time.Duration) error {
			fmt.Println("hand-over may take", allowed)
			return nil
		}})

	ctx := context.Background()
	if err := hooks.RunStart(ctx, hooks.PreStart, reg.Hooks(hooks.PreStart), nil); err != nil {
		fmt.Println(err)
		return
	}

	rep := hooks.RunDrainPhases(ctx, reg.DrainPhases(), 10*time.Second, nil)
	for _, p := range rep.Phases {
		fmt.Println(p.Name, p.Outcome)
	}

	err := hooks.RunShutdown(ctx, hooks.PreShutdown, reg.Hooks(hooks.PreShutdown), 5*time.Second, nil)
	fmt.Println("shutdown hooks:", err)
	// Output:
	// pre_start: migrating
	// hand-over may take 2s
	// close-streams may take 10s
	// hand-over completed
	// close-streams completed
	// pre_shutdown: final event sent
	// shutdown hooks: pre_shutdown hook "flush-outbox": broker unreachable
}
