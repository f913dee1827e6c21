package admission

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// TestConfigBounds holds every duration, ratio and limit of Config to its floor and
// ceiling: each value outside is one problem of the one ConfigError, naming the
// field and its variable, and the values at the bounds are accepted.
func TestConfigBounds(t *testing.T) {
	t.Run("the knobs that switched protection off are refused, all in one error", func(t *testing.T) {
		env := map[string]string{
			envWindow:        "10us", // made the estimate NaN and the limit −9.22e18
			envMaxQueueDelay: "1ns",  // shed 95% at normal load
			envProbeInterval: "2h",
			envMaxLimit:      "1000000",
			envMinLimit:      "-3",
		}
		cfg, err := Config{}.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(cfg)
		var ce *fault.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("New = %v, want a *fault.ConfigError", err)
		}
		want := map[string]string{"Window": envWindow, "MaxQueueDelay": envMaxQueueDelay, "ProbeInterval": envProbeInterval,
			"MaxLimit": envMaxLimit, "MinLimit": envMinLimit}
		for _, p := range ce.Problems {
			if v, ok := want[p.Field]; !ok || v != p.Variable {
				t.Errorf("unexpected problem %v", p)
			}
			delete(want, p.Field)
		}
		if len(want) != 0 {
			t.Fatalf("problems = %v, missing %v", ce.Problems, want)
		}
	})
	cases := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"window under its floor", Config{Window: floorWindow - 1}, "Window"},
		{"window over its ceiling", Config{Window: ceilingWindow + 1}, "Window"},
		{"probe interval under its floor", Config{ProbeInterval: floorProbeInterval - 1}, "ProbeInterval"},
		{"probe interval over its ceiling", Config{ProbeInterval: ceilingProbeInterval + 1}, "ProbeInterval"},
		{"probe interval under ten windows", Config{Window: time.Second, ProbeInterval: 9 * time.Second}, "ProbeInterval"},
		{"queue delay under its floor", Config{MaxQueueDelay: floorMaxQueueDelay - 1}, "MaxQueueDelay"},
		{"queue delay over its ceiling", Config{MaxQueueDelay: ceilingMaxQueueDelay + 1}, "MaxQueueDelay"},
		{"tolerance under its floor", Config{Tolerance: 0.99}, "Tolerance"},
		{"tolerance over its ceiling", Config{Tolerance: ceilingTolerance + 0.01}, "Tolerance"},
		{"tolerance NaN", Config{Tolerance: math.NaN()}, "Tolerance"},
		{"max limit over its ceiling", Config{MaxLimit: ceilingLimit + 1}, "MaxLimit"},
		{"min limit negative", Config{MinLimit: -1}, "MinLimit"},
		{"initial limit negative", Config{InitialLimit: -1}, "InitialLimit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.cfg)
			var ce *fault.ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != c.field || !strings.Contains(ce.Problems[0].Reason, "within") && !strings.Contains(ce.Problems[0].Reason, "windows") {
				t.Fatalf("New(%+v) = %v, want one problem on %s giving its bounds", c.cfg, err, c.field)
			}
		})
	}
	t.Run("the bounds themselves are accepted", func(t *testing.T) {
		for _, cfg := range []Config{
			{Window: floorWindow, ProbeInterval: floorProbeInterval, MaxQueueDelay: floorMaxQueueDelay, Tolerance: floorTolerance, MinLimit: 1, MaxLimit: 1},
			{Window: ceilingWindow / 10, ProbeInterval: ceilingProbeInterval, MaxQueueDelay: ceilingMaxQueueDelay, Tolerance: ceilingTolerance, MaxLimit: ceilingLimit},
		} {
			if _, err := New(cfg); err != nil {
				t.Errorf("New(%+v) = %v, want it accepted", cfg, err)
			}
		}
	})
}
