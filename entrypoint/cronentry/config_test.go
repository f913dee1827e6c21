package cronentry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/lock"
)

func TestNewRejectsEveryProblemAtOnce(t *testing.T) {
	run := func(context.Context, Tick) error { return nil }
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	lk := lock.NewMemory()
	s := time.Second
	jobs := []Job{
		{Every: s, Run: run},
		{Name: "dup", Every: s, Run: run},
		{Name: "dup", Every: s, Run: run},
		{Name: "a b", Every: s, Run: run},
		{Name: "both", Schedule: "@hourly", Every: s, Run: run},
		{Name: "neither", Run: run},
		{Name: "bad-expr", Schedule: "61 * * * *", Run: run},
		{Name: "too-many-fields", Schedule: "0 0 0 * * * *", Run: run},
		{Name: "bad-zone", Schedule: "CRON_TZ=Mars/Olympus 0 * * * *", Run: run},
		{Name: "zone-only", Schedule: "CRON_TZ=UTC", Run: run},
		{Name: "never", Schedule: "0 0 30 2 *", Run: run},
		{Name: "fractional-every", Schedule: "@every 1500ms", Run: run},
		{Name: "zoned", Schedule: "CRON_TZ=Europe/Paris @daily", Location: tokyo, Run: run},
		{Name: "neg-every", Every: -s, Run: run},
		{Name: "neg-jitter", Every: s, Jitter: -s, Run: run},
		{Name: "big-jitter", Every: s, Jitter: s, Run: run},
		{Name: "neg-fraction", Every: s, JitterFraction: -0.1, Run: run},
		{Name: "whole-fraction", Every: s, JitterFraction: 1, Run: run},
		{Name: "no-jitter-and-jitter", Every: time.Minute, NoJitter: true, Jitter: s, Run: run},
		{Name: "no-run", Every: s},
		{Name: "policies", Every: s, Overlap: 7, MissedAfter: -s, MaxRunTime: -s, Run: run},
		{Name: "fleet-empty", Every: s, OncePerFleet: OncePerFleet(nil, "", 0), Run: run},
		{Name: "fleet-short", Every: time.Minute, MaxRunTime: time.Minute, OncePerFleet: OncePerFleet(lk, "a", 30*s), Run: run},
		{Name: "fleet-jitter", Every: time.Minute, Jitter: 10 * s, OncePerFleet: OncePerFleet(lk, "a", 10*s), Run: run},
	}
	_, err := New(Config{}, jobs)
	var ce *fault.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want a *fault.ConfigError", err)
	}
	want := []string{
		`Jobs[0].Name: must not be empty`,
		`Jobs[2].Name: duplicates Jobs[1] ("dup")`,
		`Jobs["a b"].Name: must be made of letters, digits`,
		`Jobs["both"]: set Schedule or Every, not both`,
		`Jobs["neither"]: set Schedule (a cron expression) or Every (an interval)`,
		`Jobs["bad-expr"].Schedule: invalid cron expression "61 * * * *"`,
		`Jobs["too-many-fields"].Schedule: invalid cron expression`,
		`Jobs["bad-zone"].Schedule: unknown time zone "Mars/Olympus"`,
		`Jobs["zone-only"].Schedule: no expression after CRON_TZ=UTC`,
		`Jobs["never"].Schedule: "0 0 30 2 *" never fires`,
		`Jobs["fractional-every"].Schedule: interval in "@every 1500ms" must be whole seconds`,
		`Jobs["zoned"].Location: must be nil when Schedule names its time zone`,
		`Jobs["neg-every"].Every: must be positive, got -1s`,
		`Jobs["neg-jitter"].Jitter: must not be negative, got -1s`,
		`Jobs["big-jitter"].Jitter: must be below the interval (1s), got 1s`,
		`Jobs["neg-fraction"].JitterFraction: must lie in [0, 1), got -0.1`,
		`Jobs["whole-fraction"].JitterFraction: must lie in [0, 1), got 1`,
		`Jobs["no-jitter-and-jitter"].NoJitter: must not be set with Jitter (1s)`,
		`Jobs["no-run"].Run: must not be nil`,
		`Jobs["policies"].Overlap: unknown policy OverlapPolicy(7)`,
		`Jobs["policies"].MissedAfter: must not be negative`,
		`Jobs["policies"].MaxRunTime: must not be negative`,
		`Jobs["fleet-empty"].OncePerFleet.Lock: must not be nil`,
		`Jobs["fleet-empty"].OncePerFleet.Owner: must not be empty`,
		`Jobs["fleet-empty"].OncePerFleet.TTL: must be positive, got 0s`,
		`Jobs["fleet-short"].OncePerFleet.TTL: must be at least MaxRunTime (1m0s)`,
		`Jobs["fleet-jitter"].OncePerFleet.TTL: must exceed Jitter (10s)`,
	}
	got := make([]string, len(ce.Problems))
	for i, p := range ce.Problems {
		got[i] = p.String()
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("missing problem %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}

func TestNewRejectsNoJobs(t *testing.T) {
	_, err := New(Config{Name: "cron"}, nil)
	if err == nil || !strings.Contains(err.Error(), "jobs: must not be empty") {
		t.Errorf("New without jobs = %v", err)
	}
}

func TestNewAccepts(t *testing.T) {
	run := func(context.Context, Tick) error { return nil }
	for _, sched := range []string{
		"* * * * *", "*/10 * * * * *", "0 30 9 * * mon-fri", "@yearly", "@monthly", "@weekly", "@daily",
		"@midnight", "@hourly", "@every 1h30m", "CRON_TZ=America/New_York 0 9 * * *", "TZ=UTC @daily",
		"  0 0 29 2 *  ",
	} {
		if _, err := New(Config{Name: "cron"}, []Job{{Name: "job", Schedule: sched, Run: run}}); err != nil {
			t.Errorf("New(%q) = %v", sched, err)
		}
	}
}
