package entrypoint

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/zap"
)

// The rules of Drain and Stop, from every phase a Host can leave an entrypoint in.
func TestBaseTurns(t *testing.T) {
	type step func(b *Base)
	bind := func(b *Base) { b.Bound() }
	serve := func(b *Base) {
		if start, err := b.Serve(); !start || err != nil {
			t.Fatalf("Serve = %v, %v", start, err)
		}
	}
	drain := func(b *Base) { b.Drain() }
	stop := func(b *Base) { b.Stop() }
	for _, tc := range []struct {
		name      string
		before    []step
		drain     Turn
		stop      Turn // after that drain
		stopAlone Turn // without it
	}{
		{"new", nil, Idle, Idle, Idle},
		{"bound", []step{bind}, Unserved, Unserved, Unserved},
		{"serving", []step{bind, serve}, Served, Served, Served},
		{"drained", []step{bind, serve, drain}, Idle, Served, Served},
		{"stopped", []step{bind, serve, stop}, Idle, Idle, Idle},
		{"bound then drained", []step{bind, drain}, Idle, Unserved, Unserved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b, alone Base
			_ = b.Init("e", Telemetry{}, nil)
			_ = alone.Init("e", Telemetry{}, nil)
			for _, s := range tc.before {
				s(&b)
				s(&alone)
			}
			if got := b.Drain(); got != tc.drain {
				t.Errorf("Drain = %v, want %v", got, tc.drain)
			}
			if got := b.Stop(); got != tc.stop {
				t.Errorf("Stop after Drain = %v, want %v", got, tc.stop)
			}
			if got := alone.Stop(); got != tc.stopAlone {
				t.Errorf("Stop = %v, want %v", got, tc.stopAlone)
			}
			if got := b.Stop(); got != Idle {
				t.Errorf("second Stop = %v, want idle", got)
			}
		})
	}
}

func TestBaseOutOfTurn(t *testing.T) {
	var b Base
	_ = b.Init("api", Telemetry{}, nil)
	if _, err := b.Serve(); !errors.Is(err, ErrOutOfTurn) || err.Error() != `entrypoint "api": Serve called while new: entrypoint: called out of turn` {
		t.Fatalf("Serve before Bind = %v", err)
	}
	b.Bound()
	if err := b.Bind(); !errors.Is(err, ErrOutOfTurn) {
		t.Fatalf("second Bind = %v", err)
	}
	if start, err := b.Serve(); !start || err != nil {
		t.Fatalf("Serve = %v, %v", start, err)
	}
	if _, err := b.Serve(); !errors.Is(err, ErrOutOfTurn) {
		t.Fatalf("second Serve = %v", err)
	}
	b.Drain()
	if start, err := b.Serve(); start || err != nil {
		t.Fatalf("Serve after Drain = %v, %v; want nothing started and no error", start, err)
	}
}

// Unbound holds until a Bind succeeds; Serving from Serve until Drain, Stop or Rearm.
func TestBaseReports(t *testing.T) {
	var b Base
	_ = b.Init("e", Telemetry{}, nil)
	check := func(when string, unbound, serving bool) {
		t.Helper()
		if b.Unbound() != unbound || b.Serving() != serving {
			t.Errorf("%s: Unbound %v, Serving %v; want %v, %v", when, b.Unbound(), b.Serving(), unbound, serving)
		}
	}
	check("new", true, false)
	_ = b.Bind() // a Bind that failed: Bound is not called
	check("after a failed Bind", true, false)
	b.Bound()
	check("bound", false, false)
	_, _ = b.Serve()
	check("serving", false, true)
	b.Rearm()
	check("rearmed", false, false)
	_, _ = b.Serve()
	check("serving again", false, true)
	b.Drain()
	check("draining", false, false)
	b.Stop()
	check("stopped", false, false)
}

// The options' telemetry wins; the Host's fills the rest; nothing changes once bound.
func TestBaseSetDefaults(t *testing.T) {
	own, host := zap.NewNop(), zap.NewExample()
	var got []Telemetry
	var b Base
	use := func(t Telemetry) error { got = append(got, t); return nil }
	if err := b.Init("e", Telemetry{Logger: own}, use); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDefaults(Telemetry{Logger: host, Reporter: nopReporter{}}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Logger != own || got[1].Logger != own || got[1].Reporter == nil {
		t.Fatalf("use saw %+v; want the option's logger twice and the Host's reporter", got)
	}
	b.Lock()
	b.Bound()
	b.Unlock()
	if err := b.SetDefaults(Telemetry{Logger: host}); err != nil || len(got) != 2 {
		t.Fatalf("SetDefaults once bound: err %v, use called %d times; want nil and 2", err, len(got))
	}
}

type nopReporter struct{}

func (nopReporter) Report(context.Context, error, map[string]string) {}
func (nopReporter) Flush(context.Context) error                      { return nil }
