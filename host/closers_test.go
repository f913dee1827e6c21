package host_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

func TestOnClose(t *testing.T) {
	t.Run("close steps run in reverse after the entrypoints stopped, each bounded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var order []string
			loop, err := entrypoint.NewLoop(entrypoint.LoopConfig{Name: "worker", Every: time.Second}, func(context.Context) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			x := hosttest.New(t, host.AppSpec{ServiceName: "svc", Budgets: host.Budgets{StepTimeout: 2 * time.Second}})
			h := x.Host()
			if err := h.Register(host.Registration{Entrypoint: loop}); err != nil {
				t.Fatal(err)
			}
			before := h.WorstCase().Total
			for _, name := range []string{"pool", "producer", "hung"} {
				if err := h.OnClose(name, func(ctx context.Context) error {
					order = append(order, name)
					if name == "hung" {
						<-ctx.Done() // overruns its StepTimeout
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			if grew := h.WorstCase().Total - before; grew < 3*2*time.Second {
				t.Errorf("the worst case grew by %s for three close steps of StepTimeout 2s", grew)
			}
			x.Start()
			x.WaitStage(host.StageServe)
			x.Stop()
			err = x.Wait()
			if want := []string{"hung", "producer", "pool"}; !slices.Equal(order, want) {
				t.Errorf("close steps ran %v, want %v (reverse order, the next after one overran)", order, want)
			}
			if got := h.Shutdown().Result(); got != host.ResultTimeout {
				t.Errorf("result %v after a close step overran, want timeout (err %v)", got, err)
			}
			stages := x.Stages()
			if i, j := slices.Index(stages, host.StageStop), slices.Index(stages, host.StageCloseScope); i < 0 || j < i {
				t.Errorf("stages %v: close_scope must follow stop", stages)
			}
			if err := h.OnClose("late", func(context.Context) error { return nil }); !errors.Is(err, host.ErrRegisterAfterRun) {
				t.Errorf("OnClose after Run = %v, want ErrRegisterAfterRun", err)
			}
		})
	})

	t.Run("close steps run after a failed startup too", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			closed := false
			x := hosttest.New(t, host.AppSpec{ServiceName: "svc", Warmups: []host.Step{{
				Name: "broken", Start: func(context.Context) error { return errors.New("no") },
			}}})
			x.Host().OnClose("pool", func(context.Context) error { closed = true; return nil })
			x.Start()
			if err := x.Wait(); err == nil {
				t.Fatal("Run returned nil after a failed warmup")
			}
			if !closed {
				t.Error("the close step did not run after the failed startup")
			}
		})
	})

	t.Run("a nameless or nil step is refused", func(t *testing.T) {
		x := hosttest.New(t, host.AppSpec{ServiceName: "svc"})
		if err := x.Host().OnClose("", func(context.Context) error { return nil }); err == nil {
			t.Error("OnClose with no name accepted")
		}
		if err := x.Host().OnClose("pool", nil); err == nil {
			t.Error("OnClose with a nil func accepted")
		}
	})
}

// servicewright_shutdowns_total is counted while the probe listener still serves
// /metrics: a post_shutdown hook, which runs before the listener closes, sees it.
func TestShutdownsCountedBeforeProbesClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *host.Host
		var seen float64 = -1
		lc := &hooks.Registry{}
		lc.AddPostShutdown("read", func(context.Context) error {
			mfs, err := h.Gatherer().Gather()
			if err != nil {
				return err
			}
			for _, mf := range mfs {
				if mf.GetName() == "servicewright_shutdowns_total" {
					for _, m := range mf.GetMetric() {
						if m.GetLabel()[0].GetValue() == "success" {
							seen = m.GetCounter().GetValue()
						}
					}
				}
			}
			return nil
		})
		x := hosttest.New(t, host.AppSpec{ServiceName: "svc", Lifecycle: lc})
		h = x.Host()
		x.Start()
		x.WaitStage(host.StageServe)
		if got := shutdownsCounted(t, h); len(got) != 4 || got["success"] != 0 {
			t.Errorf("servicewright_shutdowns_total while serving = %v, want each of the four results at 0", got)
		}
		x.Stop()
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
		if seen != 1 {
			t.Errorf("servicewright_shutdowns_total = %v in a post_shutdown hook, want 1", seen)
		}
	})
}

// shutdownsCounted is servicewright_shutdowns_total by result, as /metrics exports it.
func shutdownsCounted(t *testing.T, h *host.Host) map[string]float64 {
	t.Helper()
	mfs, err := h.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "servicewright_shutdowns_total" {
			for _, m := range mf.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	return got
}
