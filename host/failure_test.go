package host_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

func names(j *journal) []string {
	var out []string
	for _, l := range j.get() {
		out = append(out, strings.Fields(l)[0])
	}
	return out
}

// drainsSorted sorts each run of consecutive Drain lines: the drains run at once, so
// only their being together, between the Binds and the Stops, is an order.
func drainsSorted(lines []string) []string {
	out := slices.Clone(lines)
	isDrain := func(l string) bool { return strings.HasSuffix(strings.Fields(l)[0], ".Drain") }
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && isDrain(out[j]) {
			j++
		}
		slices.Sort(out[i:j])
		i = max(j, i+1)
	}
	return out
}

func TestFailures(t *testing.T) {
	t.Run("a Stop that hangs is abandoned and the others still stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			release := make(chan struct{})
			b := newFake("b", j)
			b.stopF = func(context.Context) error { <-release; return nil }
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: newFake("a", j), Order: 1}, {Entrypoint: b, Order: 2}},
				Budgets:     host.Budgets{StepTimeout: 3 * time.Second},
			})
			x.WaitStage(host.StageServe)
			began := time.Now()
			x.Stop()
			x.WaitStage(host.StagePreShutdown)
			if d := time.Since(began); d < 3*time.Second || d > 3*time.Second+100*time.Millisecond {
				t.Errorf("cleanup began %s after the stop; want the 3s StepTimeout (+ courtesy)", d)
			}
			err := x.Wait()
			close(release)
			if !errors.Is(err, host.ErrShutdownTimeout) || !strings.Contains(err.Error(), `entrypoint \"b\" Stop`) && !strings.Contains(err.Error(), `"b" Stop`) {
				t.Errorf("Run = %v, want ErrShutdownTimeout naming b's Stop", err)
			}
			if got := names(j); !slices.Contains(got, "a.Stop") {
				t.Errorf("a was not stopped: %v", got)
			}
		})
	})

	t.Run("only bound entrypoints are drained and stopped, and the bind error is returned", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			b := newFake("b", j)
			boom := errors.New("address in use")
			b.bind = func(context.Context) error { return boom }
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{
				{Entrypoint: newFake("a", j), Order: 1}, {Entrypoint: b, Order: 2}, {Entrypoint: newFake("c", j), Order: 3},
			}})
			err := x.Wait()
			var se *host.StartupError
			if !errors.As(err, &se) || se.Stage != host.StageBind || !errors.Is(err, boom) {
				t.Fatalf("Run = %v, want a StartupError at bind wrapping the cause", err)
			}
			if host.ExitCode(err) != 1 {
				t.Errorf("exit code %d, want 1", host.ExitCode(err))
			}
			want := []string{"a.Bind", "b.Bind", "a.Drain", "a.Stop"}
			if got := names(j); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	})

	t.Run("a failed pre_start tears down only what started", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			reg := &hooks.Registry{}
			reg.AddPreStart("migrate", func(context.Context) error { return errors.New("migration failed") })
			reg.AddPreShutdown("flush", recordHook(j, "pre_shutdown"))
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}},
				Warmups: []host.Step{
					{Name: "ok", Start: func(context.Context) error { return nil },
						Stop: func(context.Context) error { j.add("ok.stop"); return nil }},
					{Name: "later", Priority: 1, Start: func(context.Context) error { return nil },
						Stop: func(context.Context) error { j.add("later.stop"); return nil }},
				},
				Lifecycle: reg,
				Container: hostfx.Container(fx.Invoke(func(lc fx.Lifecycle) {
					lc.Append(fx.StopHook(func() { j.add("scope.close") }))
				})),
			})
			err := x.Wait()
			if err == nil || !strings.Contains(err.Error(), `pre_start hook "migrate"`) {
				t.Fatalf("Run = %v, want the pre_start failure named", err)
			}
			want := []string{"pre_shutdown", "later.stop", "ok.stop", "scope.close"}
			if got := names(j); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v (no Bind, warmups stopped in reverse)", got, want)
			}
		})
	})

	t.Run("a panic in Bind becomes an error naming the entrypoint", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			a := newFake("a", j)
			a.bind = func(context.Context) error { panic("nil map") }
			err := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: a}}}).Wait()
			var pe *fault.PanicError
			if !errors.As(err, &pe) || !strings.Contains(pe.What, `entrypoint "a" Bind`) {
				t.Fatalf("Run = %v, want a PanicError naming a's Bind", err)
			}
		})
	})

	t.Run("an essential entrypoint's failure stops the service and is returned", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			a := newFake("a", j)
			boom := errors.New("consumer lost")
			a.serve = func(context.Context, <-chan struct{}) error {
				time.Sleep(time.Second)
				return boom
			}
			err := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: a}, {Entrypoint: newFake("b", j)}}}).Wait()
			var ee *host.EntrypointError
			if !errors.As(err, &ee) || ee.Entrypoint != "a" || !errors.Is(err, boom) {
				t.Fatalf("Run = %v, want EntrypointError for a", err)
			}
			if got := names(j); !slices.Contains(got, "b.Drain") || !slices.Contains(got, "b.Stop") {
				t.Errorf("b was not drained and stopped: %v", got)
			}
		})
	})

	t.Run("Serve returning nil before stop is a failure", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			a := newFake("a", j)
			a.serve = func(context.Context, <-chan struct{}) error { return nil }
			err := start(t, j, host.AppSpec{Entrypoints: []host.Registration{{Entrypoint: a}}}).Wait()
			if !errors.Is(err, entrypoint.ErrReturnedEarly) {
				t.Fatalf("Run = %v, want ErrServeReturned", err)
			}
		})
	})

	t.Run("a non-essential entrypoint's failure leaves the others serving", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			side := newFake("metrics", j)
			side.serve = func(context.Context, <-chan struct{}) error { panic("sidecar died") }
			x := start(t, j, host.AppSpec{Entrypoints: []host.Registration{
				{Entrypoint: newFake("api", j)}, {Entrypoint: side, NonEssential: true},
			}})
			x.WaitStage(host.StageServe)
			time.Sleep(time.Minute)
			synctest.Wait()
			if s := x.Host().Stage(); s != host.StageServe {
				t.Fatalf("stage = %s a minute after a non-essential failure, want serve", s)
			}
			lc := x.Host().Snapshot()
			if lc.Entrypoints[1].State != "failed" || lc.Entrypoints[0].State != "serving" {
				t.Errorf("lifecycle = %+v", lc.Entrypoints)
			}
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Errorf("Run = %v, want nil: the failure was non-essential", err)
			}
		})
	})

	t.Run("a shutdown timeout never masks the failure that caused the shutdown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			boom := errors.New("boom")
			a := newFake("a", j)
			a.serve = func(context.Context, <-chan struct{}) error { return boom }
			release := make(chan struct{})
			b := newFake("b", j)
			b.drain = func(context.Context) error { <-release; return nil }
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: a}, {Entrypoint: b}},
				Budgets:     host.Budgets{DrainGrace: time.Second, Deadline: 2 * time.Second},
			})
			err := x.Wait()
			close(release)
			if !errors.Is(err, boom) || errors.Is(err, host.ErrShutdownTimeout) {
				t.Fatalf("Run = %v, want the cause alone", err)
			}
			if r := x.Host().Shutdown().Result(); r != host.ResultFailure {
				t.Errorf("Result = %s, want failure, as the report says", r)
			}
		})
	})
}
