package leader

import (
	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/fault"
)

func noLead(context.Context, *Term) error { return nil }

// validate is resolve's problems as one error.
func validate(s Config) error {
	var l fault.Problems
	s.resolve(&l)
	return l.Err()
}

func TestSpecValidate(t *testing.T) {
	valid := vSpec(lock.NewMemory(), "a")
	if err := validate(valid); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	cases := []struct {
		name   string
		change func(*Config)
		field  string
		reason string // a part of the reason
	}{
		{"timings exceed the TTL", func(s *Config) { s.YieldGrace = 7 * time.Second },
			"TTL", "RenewEvery + YieldGrace + ReleaseTimeout + Margin must be less than TTL (4s + 7s + 1s + 1s = 13s, TTL 12s)"},
		{"timings equal to the TTL", func(s *Config) { s.RenewEvery = 8 * time.Second },
			"TTL", "= 12s, TTL 12s"},
		{"default margin does not fit a short TTL", func(s *Config) {
			*s = Config{Lock: s.Lock, Key: "k", Owner: "a", TTL: 2 * time.Second, YieldGrace: 300 * time.Millisecond, ReleaseTimeout: 100 * time.Millisecond}
		}, "TTL", "666.666666ms + 300ms + 100ms + 1s"},
		{"release timeout longer than the grace", func(s *Config) { s.ReleaseTimeout = 1500 * time.Millisecond; s.YieldGrace = time.Second },
			"ReleaseTimeout", "must not exceed YieldGrace (ReleaseTimeout 1.5s, YieldGrace 1s)"},
		{"negative TTL", func(s *Config) { s.TTL = -time.Second }, "TTL", "must not be negative"},
		{"negative campaign interval", func(s *Config) { s.CampaignEvery = -1 }, "CampaignEvery", "must not be negative"},
		{"negative renewal interval", func(s *Config) { s.RenewEvery = -1 }, "RenewEvery", "must not be negative"},
		{"negative grace", func(s *Config) { s.YieldGrace = -1 }, "YieldGrace", "must not be negative"},
		{"negative release timeout", func(s *Config) { s.ReleaseTimeout = -1 }, "ReleaseTimeout", "must not be negative"},
		{"negative margin", func(s *Config) { s.Margin = -1 }, "Margin", "must not be negative"},
		{"key ending in :want", func(s *Config) { s.Key = "publisher:want" }, "Key", `must not end in ":want"`},
		{"empty key", func(s *Config) { s.Key = "" }, "Key", "must not be empty"},
		{"empty owner", func(s *Config) { s.Owner = "" }, "Owner", "must not be empty"},
		{"no lock", func(s *Config) { s.Lock = nil }, "Lock", "must not be nil"},
		{"handoff without prefer", func(s *Config) { s.Handoff = true }, "Prefer", "must be set when Handoff is true"},
		{"fence floor without fence advance", func(s *Config) {
			s.FenceFloor = func(context.Context) (uint64, error) { return 0, nil }
		}, "FenceFloor", "needs RequiresFenceAdvance"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := valid
			c.change(&s)
			err := validate(s)
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || len(ce.Problems) != 1 {
				t.Fatalf("resolve = %v, want one problem with %s", err, c.field)
			}
			if p := ce.Problems[0]; p.Field != c.field || !strings.Contains(p.Reason, c.reason) {
				t.Fatalf("problem %q, want field %s with %q", p, c.field, c.reason)
			}
			if _, err := New(s, noLead); !errors.As(err, &ce) {
				t.Fatalf("New accepted it: %v", err)
			}
		})
	}

	t.Run("every problem at once", func(t *testing.T) {
		_, err := New(Config{Key: "x:want", TTL: -1, Retry: entrypoint.Backoff{Initial: -1, Max: -2}}, nil)
		assertProblems(t, err, "TTL", "Retry.Initial", "Retry.Max", "Lock", "Key", "Owner", "lead")
	})

	t.Run("defaults", func(t *testing.T) {
		l, err := New(Config{Lock: lock.NewMemory(), Key: "k", Owner: "a"}, noLead)
		if err != nil {
			t.Fatal(err)
		}
		s := l.Config()
		want := Config{Name: "leadership:k", TTL: 15 * time.Second, CampaignEvery: 2 * time.Second, RenewEvery: 5 * time.Second,
			YieldGrace: 2 * time.Second, ReleaseTimeout: time.Second, Margin: time.Second}
		if s.Name != want.Name || s.TTL != want.TTL || s.CampaignEvery != want.CampaignEvery || s.RenewEvery != want.RenewEvery ||
			s.YieldGrace != want.YieldGrace || s.ReleaseTimeout != want.ReleaseTimeout || s.Margin != want.Margin {
			t.Fatalf("defaults %+v", s)
		}
		if got := s.DrainTime(); got != 6*time.Second {
			t.Fatalf("DrainTime = %v, want YieldGrace + 3×ReleaseTimeout + 1s = 6s", got)
		}
		if l.Name() != "leadership:k" {
			t.Fatalf("Name = %q", l.Name())
		}
	})

	t.Run("two leaderships share one registry", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		for _, key := range []string{"a", "b"} {
			if _, err := New(Config{Lock: lock.NewMemory(), Key: key, Owner: "o"}, noLead, WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// noAdvanceLock is a lock whose backend cannot advance its counter.
type noAdvanceLock struct{ lock.Lock }

func (noAdvanceLock) AdvanceFence(context.Context, string, uint64) error {
	return errors.ErrUnsupported
}

func TestBind(t *testing.T) {
	t.Run("refuses a lock that cannot advance when fence advance is required", func(t *testing.T) {
		s := vSpec(noAdvanceLock{lock.NewMemory()}, "a")
		s.RequiresFenceAdvance = true
		l, err := New(s, noLead)
		if err != nil {
			t.Fatal(err)
		}
		assertProblems(t, l.Bind(context.Background()), "RequiresFenceAdvance")
	})
	t.Run("does not fail on an unreachable backend", func(t *testing.T) {
		s := vSpec(&spyLock{Lock: lock.NewMemory(), inspect: func(context.Context, string) error {
			return errors.New("connection refused")
		}}, "a")
		l, err := New(s, noLead)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Bind(context.Background()); err != nil {
			t.Fatalf("Bind = %v, want nil", err)
		}
	})
}
