package entrypoint

import (
	"errors"
	"testing"
)

func TestGuard(t *testing.T) {
	t.Run("the Host's order moves new → bound → serving → draining → stopped", func(t *testing.T) {
		g := NewGuard("http")
		if err := g.Bind(); err != nil {
			t.Fatalf("Bind = %v", err)
		}
		g.Bound()
		if start, err := g.Serve(); !start || err != nil {
			t.Fatalf("Serve = %v, %v; want true, nil", start, err)
		}
		if prev := g.Drain(); prev != PhaseServing {
			t.Errorf("Drain found %v, want serving", prev)
		}
		if prev := g.Stop(); prev != PhaseDraining || g.Phase() != PhaseStopped {
			t.Errorf("Stop found %v and left %v", prev, g.Phase())
		}
	})

	t.Run("a call out of turn is one error format wrapping ErrOutOfTurn", func(t *testing.T) {
		g := NewGuard("http")
		_, err := g.Serve()
		if !errors.Is(err, ErrOutOfTurn) {
			t.Fatalf("Serve before Bind = %v, want ErrOutOfTurn", err)
		}
		if want := `entrypoint "http": Serve called while new: called out of turn`; err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
		g.Bound()
		if err := g.Bind(); !errors.Is(err, ErrOutOfTurn) {
			t.Errorf("second Bind = %v, want ErrOutOfTurn", err)
		}
		g.Serve()
		if _, err := g.Serve(); !errors.Is(err, ErrOutOfTurn) {
			t.Errorf("second Serve = %v, want ErrOutOfTurn", err)
		}
	})

	t.Run("Serve after Drain or Stop starts nothing and is no error", func(t *testing.T) {
		for _, end := range []func(*Guard) Phase{(*Guard).Drain, (*Guard).Stop} {
			g := NewGuard("loop")
			g.Bound()
			end(&g)
			if start, err := g.Serve(); start || err != nil {
				t.Errorf("Serve after %v = %v, %v; want false, nil", g.Phase(), start, err)
			}
		}
	})

	t.Run("Drain and Stop before Bind leave it new", func(t *testing.T) {
		g := NewGuard("cron")
		if g.Drain() != PhaseNew || g.Stop() != PhaseNew || g.Phase() != PhaseNew {
			t.Fatalf("phase = %v, want new", g.Phase())
		}
		if err := g.Bind(); err != nil {
			t.Errorf("Bind after an early Drain and Stop = %v", err)
		}
	})

	t.Run("Drain after Stop keeps it stopped", func(t *testing.T) {
		g := NewGuard("http")
		g.Bound()
		g.Stop()
		if prev := g.Drain(); prev != PhaseStopped || g.Phase() != PhaseStopped {
			t.Errorf("Drain found %v and left %v, want stopped", prev, g.Phase())
		}
	})
}
