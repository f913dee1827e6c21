package entrypoint

import (
	"testing"

	"github.com/servicewright/servicewright/entrypoint/admission"
)

// The framework's limiter is a Gate's Limiter.
var _ Limiter = (*admission.Limiter)(nil)

// TestGateNilLimiter: a nil *admission.Limiter (admission off: New with Off) in
// SetLimiter or AdmitTo limits nothing, and Limiter reports none, rather than the
// Gate calling a method on the nil pointer.
func TestGateNilLimiter(t *testing.T) {
	off, err := admission.New(admission.Config{Off: true})
	if err != nil || off != nil {
		t.Fatalf("New(Off) = %v, %v; want nil, nil", off, err)
	}
	var g Gate
	g.SetLimiter(off)
	if lim := g.Limiter(); lim != nil {
		t.Fatalf("Limiter() = %#v, want nil", lim)
	}
	var tickets []Ticket
	for range 100 {
		tk, v := g.Admit(Ordinary)
		if v != Admitted {
			t.Fatalf("Admit = %v, want admitted", v)
		}
		tickets = append(tickets, tk)
		if tk, v = g.AdmitTo(off, Ordinary); v != Admitted {
			t.Fatalf("AdmitTo(nil limiter) = %v, want admitted", v)
		}
		tickets = append(tickets, tk)
	}
	if n := g.InFlight(); n != 200 {
		t.Fatalf("InFlight = %d, want 200", n)
	}
	for _, tk := range tickets {
		tk.Leave()
	}
	if n := g.InFlight(); n != 0 {
		t.Fatalf("InFlight after Leave = %d, want 0", n)
	}
}

// limitedGate returns a Gate whose limiter holds the limit at n.
func limitedGate(t testing.TB, n int) *Gate {
	t.Helper()
	lim, err := admission.New(admission.Config{MinLimit: n, MaxLimit: n})
	if err != nil {
		t.Fatal(err)
	}
	g := new(Gate)
	g.SetLimiter(lim)
	return g
}

func TestGateAdmit(t *testing.T) {
	t.Run("refuses ordinary work beyond the limit, and only that", func(t *testing.T) {
		g := limitedGate(t, 2)
		a, va := g.Admit(Ordinary)
		b, vb := g.Admit(Ordinary)
		if va != Admitted || vb != Admitted {
			t.Fatalf("first two Admits = %v, %v; want admitted under a limit of 2", va, vb)
		}
		c, vc := g.Admit(Ordinary)
		if vc != Overloaded || c != (Ticket{}) {
			t.Fatalf("third Admit = %v, %+v; want Overloaded with the zero Ticket", vc, c)
		}
		c.Leave() // a refused Ticket's Leave does nothing
		crit, vcrit := g.Admit(Critical)
		ex, vex := g.Admit(Exempt)
		if vcrit != Admitted || vex != Admitted {
			t.Fatalf("Critical, Exempt at the limit = %v, %v; want both admitted", vcrit, vex)
		}
		if got := g.InFlight(); got != 4 {
			t.Fatalf("InFlight = %d, want 4 (2 ordinary, 1 critical, 1 exempt)", got)
		}
		if got := g.Limiter().ShedCount(); got != 1 {
			t.Fatalf("ShedCount = %d, want 1", got)
		}
		ex.Leave()
		if _, v := g.Admit(Ordinary); v != Overloaded {
			t.Fatalf("Admit after the exempt unit left = %v, want Overloaded: exempt work does not count", v)
		}
		crit.Leave()
		a.Leave()
		d, vd := g.Admit(Ordinary)
		if vd != Admitted {
			t.Fatalf("Admit after two limited units left = %v, want admitted", vd)
		}
		b.Leave()
		d.Leave()
		if got := g.InFlight(); got != 0 {
			t.Fatalf("InFlight = %d after every unit left, want 0", got)
		}
	})

	t.Run("a closed gate says draining, before the limit", func(t *testing.T) {
		g := limitedGate(t, 1)
		held, _ := g.Admit(Ordinary)
		g.Close()
		for _, c := range []Class{Ordinary, Critical, Exempt} {
			if tk, v := g.Admit(c); v != Draining || tk != (Ticket{}) {
				t.Fatalf("Admit(%d) on a closed Gate = %v, want Draining", c, v)
			}
		}
		held.Leave()
		if g.InFlight() != 0 {
			t.Fatalf("InFlight = %d, want 0", g.InFlight())
		}
	})

	t.Run("Detach frees the limit and keeps the drain's count", func(t *testing.T) {
		g := limitedGate(t, 1)
		tk, _ := g.Admit(Ordinary)
		leave := tk.Detach()
		next, v := g.Admit(Ordinary)
		if v != Admitted {
			t.Fatalf("Admit after Detach = %v, want admitted: a detached unit no longer counts against the limit", v)
		}
		if g.InFlight() != 2 {
			t.Fatalf("InFlight = %d, want 2: the detached unit still counts for Drain", g.InFlight())
		}
		next.Leave()
		leave()
		if g.InFlight() != 0 {
			t.Fatalf("InFlight = %d, want 0", g.InFlight())
		}
	})

	t.Run("without a limiter every class is admitted", func(t *testing.T) {
		var g Gate
		var ts []Ticket
		for range 100 {
			tk, v := g.Admit(Ordinary)
			if v != Admitted {
				t.Fatalf("Admit without a limiter = %v", v)
			}
			ts = append(ts, tk)
		}
		for _, tk := range ts {
			tk.Leave()
		}
		if g.InFlight() != 0 {
			t.Fatalf("InFlight = %d, want 0", g.InFlight())
		}
	})

	t.Run("surplus leave of a limited unit panics and keeps the counts", func(t *testing.T) {
		g := limitedGate(t, 1)
		tk, _ := g.Admit(Ordinary)
		tk.Leave()
		defer func() {
			if recover() == nil {
				t.Error("second Leave did not panic")
			}
			if g.InFlight() != 0 {
				t.Errorf("InFlight = %d after the recovered panic, want 0", g.InFlight())
			}
			if _, v := g.Admit(Ordinary); v != Admitted {
				t.Errorf("Admit after a recovered surplus Leave = %v, want admitted", v)
			}
		}()
		tk.Leave()
	})

	t.Run("Admit and Leave allocate nothing", func(t *testing.T) {
		g := limitedGate(t, 10)
		if n := testing.AllocsPerRun(1000, func() {
			tk, _ := g.Admit(Ordinary)
			tk.Leave()
		}); n != 0 {
			t.Fatalf("Admit+Leave allocates %v per run, want 0", n)
		}
	})
}

// BenchmarkGateLimited is BenchmarkGate with the adaptive limiter on: what an
// ordinary unit pays for admission, counting and the limiter's sampling.
func BenchmarkGateLimited(b *testing.B) {
	lim, err := admission.New(admission.Config{})
	if err != nil {
		b.Fatal(err)
	}
	var g Gate
	g.SetLimiter(lim)
	b.ReportAllocs()
	for b.Loop() {
		tk, _ := g.Admit(Ordinary)
		tk.Leave()
	}
}

// BenchmarkGateAdmitNoLimiter is Admit on a Gate without a limiter.
func BenchmarkGateAdmitNoLimiter(b *testing.B) {
	var g Gate
	b.ReportAllocs()
	for b.Loop() {
		tk, _ := g.Admit(Ordinary)
		tk.Leave()
	}
}
