package hookrun

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// trace records which hooks ran, in order.
type trace struct{ ran []string }

func (tr *trace) hook(name string, err error) hooks.Hook {
	return hooks.Hook{Name: name, Run: func(context.Context) error {
		tr.ran = append(tr.ran, name)
		return err
	}}
}

func TestStart(t *testing.T) {
	t.Run("runs every hook in order", func(t *testing.T) {
		var tr trace
		hs := []hooks.Hook{tr.hook("a", nil), tr.hook("b", nil), tr.hook("c", nil)}
		if err := Start(context.Background(), hooks.PreStart, hs, nil); err != nil {
			t.Fatal(err)
		}
		if !equal(tr.ran, []string{"a", "b", "c"}) {
			t.Fatalf("ran %v", tr.ran)
		}
	})

	t.Run("first failure stops the rest and names the hook", func(t *testing.T) {
		var tr trace
		errMigrate := errors.New("migration 42 failed")
		hs := []hooks.Hook{tr.hook("a", nil), tr.hook("migrate", errMigrate), tr.hook("c", nil)}
		err := Start(context.Background(), hooks.PreStart, hs, zap.NewNop())
		if !errors.Is(err, errMigrate) {
			t.Fatalf("err = %v, want wrapping %v", err, errMigrate)
		}
		if want := `pre_start hook "migrate": migration 42 failed`; err.Error() != want {
			t.Fatalf("err = %q, want %q", err, want)
		}
		if !equal(tr.ran, []string{"a", "migrate"}) {
			t.Fatalf("ran %v; hooks after the failure must not run", tr.ran)
		}
	})

	t.Run("panic is recovered as a PanicError naming the hook", func(t *testing.T) {
		var tr trace
		hs := []hooks.Hook{{Name: "announce", Run: func(context.Context) error { panic("boom") }}, tr.hook("c", nil)}
		err := Start(context.Background(), hooks.PostStart, hs, nil)
		var pe *fault.PanicError
		if !errors.As(err, &pe) || pe.Value != "boom" {
			t.Fatalf("err = %v, want a *fault.PanicError with value boom", err)
		}
		if want := `post_start hook "announce" panicked: boom`; err.Error() != want {
			t.Fatalf("err = %q, want %q", err, want)
		}
		if len(tr.ran) != 0 {
			t.Fatalf("ran %v after a panic", tr.ran)
		}
	})

	t.Run("a returned PanicError is the hook's own error and is wrapped", func(t *testing.T) {
		own := &fault.PanicError{What: "inner", Value: "x"}
		err := Start(context.Background(), hooks.PreStart, []hooks.Hook{{Name: "h", Run: func(context.Context) error { return own }}}, nil)
		if !errors.Is(err, own) || !strings.HasPrefix(err.Error(), `pre_start hook "h": `) {
			t.Fatalf("err = %q", err)
		}
	})

	t.Run("cancelled ctx stops before the next hook and names it", func(t *testing.T) {
		var tr trace
		ctx, cancel := context.WithCancel(context.Background())
		hs := []hooks.Hook{
			{Name: "a", Run: func(context.Context) error { tr.ran = append(tr.ran, "a"); cancel(); return nil }},
			tr.hook("b", nil),
		}
		err := Start(ctx, hooks.PreStart, hs, nil)
		if !errors.Is(err, context.Canceled) || err.Error() != `pre_start hook "b": context canceled` {
			t.Fatalf("err = %v", err)
		}
		if !equal(tr.ran, []string{"a"}) {
			t.Fatalf("ran %v", tr.ran)
		}
	})

	t.Run("a hook that ignores a cancelled ctx is abandoned hooks.AbandonAfter later, named", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			var tr trace
			ctx, cancel := context.WithCancel(context.Background())
			hs := []hooks.Hook{
				{Name: "migrate", Run: func(context.Context) error { <-release; return nil }}, // stuck on a lock
				tr.hook("after", nil),
			}
			time.AfterFunc(3*time.Second, cancel)
			began := time.Now()
			err := Start(ctx, hooks.PreStart, hs, nil)
			if !errors.Is(err, fault.ErrAbandoned) || !strings.Contains(err.Error(), `pre_start hook "migrate"`) {
				t.Errorf("err = %v, want ErrAbandoned naming the hook", err)
			}
			if d := time.Since(began); d != 3*time.Second+hooks.AbandonAfter {
				t.Errorf("Start returned after %v, want the cancellation + %v", d, hooks.AbandonAfter)
			}
			if len(tr.ran) != 0 {
				t.Errorf("ran %v after an abandoned hook", tr.ran)
			}
		})
	})

	t.Run("no hooks is a success", func(t *testing.T) {
		if err := Start(context.Background(), hooks.PreStart, nil, nil); err != nil {
			t.Fatal(err)
		}
	})
}

func TestShutdown(t *testing.T) {
	t.Run("every hook runs despite failures and all errors are joined", func(t *testing.T) {
		var tr trace
		errA, errC := errors.New("outbox unreachable"), errors.New("report lost")
		hs := []hooks.Hook{
			tr.hook("a", errA),
			{Name: "b", Run: func(context.Context) error { tr.ran = append(tr.ran, "b"); panic("bad") }},
			tr.hook("c", errC),
			tr.hook("d", nil),
		}
		core, logs := observer.New(zap.DebugLevel)
		err := Shutdown(context.Background(), hooks.PreShutdown, hs, time.Second, zap.New(core))
		if !equal(tr.ran, []string{"a", "b", "c", "d"}) {
			t.Fatalf("ran %v", tr.ran)
		}
		var pe *fault.PanicError
		if !errors.Is(err, errA) || !errors.Is(err, errC) || !errors.As(err, &pe) {
			t.Fatalf("err = %v, want errA, errC and a PanicError joined", err)
		}
		for _, want := range []string{
			`pre_shutdown hook "a": outbox unreachable`,
			`pre_shutdown hook "b" panicked: bad`,
			`pre_shutdown hook "c": report lost`,
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("err %q lacks %q", err, want)
			}
		}
		for _, name := range []string{"a", "b", "c"} {
			if n := logs.FilterField(zap.String("hook", name)).FilterLevelExact(zap.ErrorLevel).Len(); n != 1 {
				t.Errorf("hook %s: %d error logs, want 1", name, n)
			}
		}
	})

	t.Run("all succeeding returns nil", func(t *testing.T) {
		var tr trace
		if err := Shutdown(context.Background(), hooks.PostShutdown, []hooks.Hook{tr.hook("a", nil), tr.hook("b", nil)}, time.Second, nil); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("hanging hook is abandoned at its timeout plus ShutdownUnwind and the next runs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release) // lets the abandoned goroutine end inside the bubble
			start := time.Now()
			var nextAt time.Duration
			hs := []hooks.Hook{
				{Name: "stuck", Run: func(context.Context) error { <-release; return nil }},
				{Name: "next", Run: func(context.Context) error { nextAt = time.Since(start); return nil }},
			}
			err := Shutdown(context.Background(), hooks.PreShutdown, hs, 5*time.Second, nil)
			if want := 5*time.Second + ShutdownUnwind; nextAt != want {
				t.Fatalf("next hook started at %v, want %v", nextAt, want)
			}
			if !errors.Is(err, fault.ErrAbandoned) || !strings.Contains(err.Error(), `pre_shutdown hook "stuck"`) {
				t.Fatalf("err = %v", err)
			}
		})
	})

	t.Run("hook honouring its timeout reports its own error, not abandonment", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			hs := []hooks.Hook{{Name: "flush", Run: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}}
			err := Shutdown(context.Background(), hooks.PreShutdown, hs, 2*time.Second, nil)
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, fault.ErrAbandoned) {
				t.Fatalf("err = %v", err)
			}
			if d := time.Since(start); d != 2*time.Second {
				t.Fatalf("took %v, want 2s", d)
			}
		})
	})

	t.Run("each hook gets its own timeout, unaffected by parent cancellation", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			type key struct{}
			parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
			cancel()
			var left []time.Duration
			probe := func(ctx context.Context) error {
				if ctx.Err() != nil || ctx.Value(key{}) != "v" {
					t.Errorf("hook ctx: err %v, value %v", ctx.Err(), ctx.Value(key{}))
				}
				d, _ := ctx.Deadline()
				left = append(left, time.Until(d))
				time.Sleep(time.Second)
				return nil
			}
			hs := []hooks.Hook{{Name: "a", Run: probe}, {Name: "b", Run: probe}}
			if err := Shutdown(parent, hooks.PostShutdown, hs, 3*time.Second, nil); err != nil {
				t.Fatal(err)
			}
			if len(left) != 2 || left[0] != 3*time.Second || left[1] != 3*time.Second {
				t.Fatalf("time to deadline per hook = %v, want [3s 3s]", left)
			}
		})
	})
}
