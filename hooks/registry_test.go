package hooks

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fleet"
)

func nop(context.Context) error { return nil }

func names[T any](xs []T, name func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return out
}

func hookNames(hs []Hook) []string { return names(hs, func(h Hook) string { return h.Name }) }
func phaseNames(ps []DrainHook) []string {
	return names(ps, func(p DrainHook) string { return p.Name })
}
func equal(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{
		PreStart: "pre_start", PostStart: "post_start",
		PreShutdown: "pre_shutdown", PostShutdown: "post_shutdown", Kind(9): "Kind(9)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

func TestRegistry(t *testing.T) {
	t.Run("zero value is empty and usable", func(t *testing.T) {
		var r Registry
		if hs, ps := r.Hooks(PreStart), r.DrainHooks(); len(hs) != 0 || len(ps) != 0 {
			t.Fatalf("got %d hooks, %d phases; want none", len(hs), len(ps))
		}
		r.AddPreStart("a", nop)
		if got := hookNames(r.Hooks(PreStart)); !equal(got, []string{"a"}) {
			t.Fatalf("Hooks(PreStart) = %v", got)
		}
	})

	t.Run("each kind keeps its hooks in registration order", func(t *testing.T) {
		var r Registry
		r.AddPreStart("s1", nop)
		r.AddPostStart("ps1", nop)
		r.AddPreStart("s2", nop)
		r.AddPreShutdown("d1", nop)
		r.AddPostShutdown("pd1", nop)
		r.Add(PreStart, Hook{Name: "s3", Run: nop})
		want := map[Kind][]string{
			PreStart: {"s1", "s2", "s3"}, PostStart: {"ps1"},
			PreShutdown: {"d1"}, PostShutdown: {"pd1"},
		}
		for k, w := range want {
			if got := hookNames(r.Hooks(k)); !equal(got, w) {
				t.Errorf("Hooks(%s) = %v, want %v", k, got, w)
			}
		}
	})

	t.Run("the first marks value is kept, others ignored", func(t *testing.T) {
		var r Registry
		m := fleet.Marks{MutatesSharedState: true}
		r.AddPreStart("marked", nop, m, fleet.Marks{RequiresLongRunning: true})
		r.AddPreStart("unmarked", nop)
		hs := r.Hooks(PreStart)
		if hs[0].Marks != m || hs[1].Marks != (fleet.Marks{}) {
			t.Fatalf("marks = %+v, %+v", hs[0].Marks, hs[1].Marks)
		}
	})

	t.Run("registration stores invalid input as given, without panicking", func(t *testing.T) {
		var r Registry
		r.AddPostStart("", nil)
		r.AddDrainHook(DrainHook{MaxDuration: -time.Second})
		if hs := r.Hooks(PostStart); len(hs) != 1 || hs[0].Run != nil {
			t.Fatalf("Hooks = %+v", hs)
		}
		if ps := r.DrainHooks(); len(ps) != 1 || ps[0].MaxDuration != -time.Second {
			t.Fatalf("DrainHooks = %+v", ps)
		}
	})

	t.Run("Hooks returns a copy", func(t *testing.T) {
		var r Registry
		r.AddPreShutdown("a", nop)
		r.AddPreShutdown("b", nop)
		hs := r.Hooks(PreShutdown)
		hs[0].Name = "changed"
		_ = append(hs[:1], Hook{Name: "appended"})
		if got := hookNames(r.Hooks(PreShutdown)); !equal(got, []string{"a", "b"}) {
			t.Fatalf("registry changed through the copy: %v", got)
		}
	})

	t.Run("DrainHooks sorts ascending by Order, stable for equal Order", func(t *testing.T) {
		var r Registry
		for _, p := range []DrainHook{
			{Name: "c20", Order: 20}, {Name: "a10", Order: 10}, {Name: "m-5", Order: -5},
			{Name: "b10", Order: 10}, {Name: "d20", Order: 20}, {Name: "e10", Order: 10},
		} {
			r.AddDrainHook(p)
		}
		want := []string{"m-5", "a10", "b10", "e10", "c20", "d20"}
		if got := phaseNames(r.DrainHooks()); !equal(got, want) {
			t.Fatalf("DrainHooks = %v, want %v", got, want)
		}
	})

	t.Run("DrainHooks returns a copy", func(t *testing.T) {
		var r Registry
		r.AddDrainHook(DrainHook{Name: "b", Order: 2})
		r.AddDrainHook(DrainHook{Name: "a", Order: 1})
		ps := r.DrainHooks()
		ps[0].Name = "changed"
		if got := phaseNames(r.DrainHooks()); !equal(got, []string{"a", "b"}) {
			t.Fatalf("registry changed through the copy: %v", got)
		}
	})

	t.Run("concurrent adds and reads are safe and lose nothing", func(t *testing.T) {
		var r Registry
		const workers, each = 8, 50
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					name := fmt.Sprintf("w%d-%d", w, i)
					r.AddPreStart(name, nop)
					r.AddPostStart(name, nop)
					r.AddPreShutdown(name, nop)
					r.AddPostShutdown(name, nop)
					r.AddDrainHook(DrainHook{Name: name, Order: i % 3})
					_ = r.Hooks(PreStart)
					_ = r.DrainHooks()
				}
			})
		}
		wg.Wait()
		for _, k := range []Kind{PreStart, PostStart, PreShutdown, PostShutdown} {
			if n := len(r.Hooks(k)); n != workers*each {
				t.Errorf("Hooks(%s) has %d, want %d", k, n, workers*each)
			}
		}
		if n := len(r.DrainHooks()); n != workers*each {
			t.Errorf("DrainHooks has %d, want %d", n, workers*each)
		}
	})
}
