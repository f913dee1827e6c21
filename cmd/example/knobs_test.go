package main

import (
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/host"
)

// TestKnobBounds: every knob's absurd values are a ConfigError naming the variable,
// and the values at the edges of its range are accepted.
func TestKnobBounds(t *testing.T) {
	refused := map[string][]string{
		"EXAMPLE_WARMUP_DELAY":   {"-1ns", "11m", "2562047h", "soon"},
		"EXAMPLE_HOOK_DELAY":     {"-1s", "11m"},
		"EXAMPLE_HANDLE_DELAY":   {"-1s", "11m"},
		"EXAMPLE_CRON_EVERY":     {"0", "1ns", "999ms", "25h", "-1s"},
		"EXAMPLE_PUBLISH_EVERY":  {"0", "1ns", "9ms", "2h"},
		"EXAMPLE_LEADER_TTL":     {"0", "1ns", "999ms", "2h"},
		"EXAMPLE_CAMPAIGN_EVERY": {"0", "1ns", "2h"},
		"EXAMPLE_BACKFILL_N":     {"0", "-1", "1000001", "9223372036854775808", "many"},
		"EXAMPLE_BACKFILL_DELAY": {"-1ms", "61s", "soon"},
	}
	accepted := map[string][]string{
		"EXAMPLE_WARMUP_DELAY":   {"0", "10m"},
		"EXAMPLE_HOOK_DELAY":     {"0", "10m"},
		"EXAMPLE_HANDLE_DELAY":   {"0", "10m"},
		"EXAMPLE_CRON_EVERY":     {"1s", "24h"},
		"EXAMPLE_PUBLISH_EVERY":  {"10ms", "1h"},
		"EXAMPLE_LEADER_TTL":     {"1s", "1h"},
		"EXAMPLE_CAMPAIGN_EVERY": {"10ms", "1h"},
		"EXAMPLE_BACKFILL_N":     {"1", "1000000"},
		"EXAMPLE_BACKFILL_DELAY": {"0", "1m"},
	}
	read := func() error {
		if _, err := readKnobs(); err != nil {
			return err
		}
		_, err := readBackfillKnobs()
		return err
	}
	for name, values := range refused {
		for _, v := range values {
			t.Run(name+"="+v, func(t *testing.T) {
				t.Setenv(name, v)
				err := read()
				if err == nil || !strings.Contains(err.Error(), name) {
					t.Fatalf("got %v, want a ConfigError naming %s", err, name)
				}
			})
		}
	}
	for name, values := range accepted {
		for _, v := range values {
			t.Run(name+"="+v, func(t *testing.T) {
				t.Setenv(name, v)
				if err := read(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestKnobsOneErrorForAll: two bad knobs are both named in the one ConfigError.
func TestKnobsOneErrorForAll(t *testing.T) {
	t.Setenv("EXAMPLE_PUBLISH_EVERY", "0")
	t.Setenv("EXAMPLE_CRON_EVERY", "1ns")
	_, err := readKnobs()
	if err == nil || !strings.Contains(err.Error(), "EXAMPLE_PUBLISH_EVERY") || !strings.Contains(err.Error(), "EXAMPLE_CRON_EVERY") {
		t.Fatalf("got %v, want one error naming both", err)
	}
	if code := host.ExitCode(err); code != 78 {
		t.Errorf("exit code %d, want 78", code)
	}
	t.Setenv("EXAMPLE_PUBLISH_EVERY", "")
	t.Setenv("EXAMPLE_CRON_EVERY", "")
	k, err := readKnobs()
	if err != nil || k.publishEvery != time.Second || k.cronEvery != 10*time.Second {
		t.Errorf("defaults: %v %v, %v", k.publishEvery, k.cronEvery, err)
	}
}
