package hosttest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHarness(t *testing.T) {
	t.Run("a 30s drain runs in virtual time and the stages are recorded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			units := 0
			loop, err := entrypoint.NewLoop(entrypoint.LoopConfig{Name: "worker", Every: time.Second}, func(ctx context.Context) error {
				units++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			x := hosttest.Start(t, host.AppSpec{
				ServiceName: "svc",
				Entrypoints: []host.Registration{{Entrypoint: loop}},
				Budgets:     host.Budgets{DrainDelay: 30 * time.Second},
			})
			if !x.WaitStage(host.StageServe) {
				t.Fatal("never served")
			}
			began := time.Now()
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(began); d != 30*time.Second {
				t.Errorf("exit took %s of virtual time, want 30s", d)
			}
			if units < 30 {
				t.Errorf("the loop ran %d units; it should keep working through the drain delay", units)
			}
			if !slices.Contains(x.Stages(), host.StageDrain) {
				t.Errorf("stages %v", x.Stages())
			}
		})
	})

	t.Run("WaitStage reports false for a stage never reached", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			x := hosttest.Start(t, host.AppSpec{ServiceName: "svc", Warmups: []host.Step{{
				Name: "broken", Start: func(context.Context) error { return errors.New("no") },
			}}})
			if x.WaitStage(host.StageServe) {
				t.Error("reached serve after a failed warmup")
			}
			if err := x.Wait(); err == nil {
				t.Error("Run returned nil after a failed warmup")
			}
		})
	})
}
