package host_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// The README's custom entrypoint, when a post_start hook fails: the Host stops the
// bound queue without ever calling Serve, and the exit is the hook's failure (1), at
// once, not a timeout of a Stop waiting for work that never started.
func TestCustomEntrypointFailedPostStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(make(chan string, 1), func(string) {})
		lc := &hooks.Registry{}
		refused := errors.New("announce refused")
		lc.AddPostStart("announce", func(context.Context) error { return refused })
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "worker",
			Entrypoints: []host.Registration{{Entrypoint: q}},
			Lifecycle:   lc,
		})
		began := time.Now()
		err := x.Wait()
		if !errors.Is(err, refused) {
			t.Fatalf("Run = %v, want the post_start error", err)
		}
		if code := host.ExitCode(err); code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		if d := time.Since(began); d != 0 {
			t.Errorf("the exit took %s of virtual time; Stop before Serve must not wait", d)
		}
	})
}

// Jobs queued but not taken at the drain stay in the queue; the one taken is finished.
func TestCustomEntrypointDropsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jobs := make(chan string, 10)
		var handled []string
		q := newQueue(jobs, func(job string) {
			time.Sleep(time.Second)
			handled = append(handled, job)
		})
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "worker",
			Entrypoints: []host.Registration{{Entrypoint: q}},
		})
		x.WaitStage(host.StageServe)
		for _, j := range []string{"a", "b", "c"} {
			jobs <- j
		}
		synctest.Wait() // "a" taken and in its handling
		x.Stop()
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
		if len(handled)+len(jobs) != 3 {
			t.Errorf("handled %v and %d left queued: a job was dropped", handled, len(jobs))
		}
		if len(handled) == 0 {
			t.Error("the job in flight at the stop was not finished")
		}
	})
}
