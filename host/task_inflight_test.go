package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
)

// A task stopped mid-unit: the shutdown report counts the unit in flight at the
// drain, and the Host's log has the task's stop line with the unit's error.
func TestTaskStoppedMidUnitIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &journal{}
		spec, logs := taskSpec(t, entrypoint.TaskConfig{Name: "backfill"}, func(ctx context.Context) error {
			for i := 1; ; i++ {
				if err := entrypoint.Checkpoint(ctx); err != nil {
					return err
				}
				select { // one unit: a query that honours its ctx
				case <-time.After(time.Second):
				case <-ctx.Done():
					return fmt.Errorf("order b%d: %w", i, ctx.Err())
				}
			}
		})
		x := start(t, j, spec)
		x.WaitStage(host.StageServe)
		time.Sleep(2500 * time.Millisecond)
		x.Stop()
		if err := x.Wait(); !errors.Is(err, fault.ErrInterrupted) {
			t.Fatalf("Run = %v, want ErrInterrupted", err)
		}
		raw, err := json.Marshal(shutdownReport(t, logs)["drains"])
		if err != nil {
			t.Fatal(err)
		}
		var drains []struct {
			Entrypoint string `json:"entrypoint"`
			InFlight   int    `json:"in_flight_at_start"`
			Left       int    `json:"left"`
		}
		if err := json.Unmarshal(raw, &drains); err != nil {
			t.Fatalf("drains %s: %v", raw, err)
		}
		if len(drains) != 1 || drains[0].Entrypoint != "backfill" || drains[0].InFlight != 1 || drains[0].Left != 0 {
			t.Errorf("drains %s, want backfill with 1 in flight at the start and 0 left", raw)
		}
		lines := logs.FilterMessageSnippet("task stopped before its work was done").All()
		if len(lines) != 1 || lines[0].ContextMap()["error"] != "order b3: context canceled" {
			t.Errorf("stop lines %v, want one with the unit's error", lines)
		}
	})
}
