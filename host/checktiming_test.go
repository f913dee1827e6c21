package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
)

// The checks' interval and timeout: zero takes the default; negative, or a timeout
// not shorter than the interval, is a ConfigError naming the field and its variable.
func TestCheckIntervalAndTimeout(t *testing.T) {
	check := map[string]health.Check{"db": health.CheckFunc(func(context.Context) error { return nil })}
	for _, tc := range []struct {
		name     string
		interval time.Duration
		timeout  time.Duration
		env      []string
		want     []string // substrings of the error; none: no error
	}{
		{name: "zero takes the defaults"},
		{name: "set", interval: time.Second, timeout: 500 * time.Millisecond},
		{name: "from the environment", env: []string{"SW_CHECK_INTERVAL", "1s", "SW_CHECK_TIMEOUT", "300ms"}},
		{name: "negative interval", interval: -time.Second,
			want: []string{"SW_CHECK_INTERVAL (CheckInterval): must not be negative, got -1s"}},
		{name: "timeout not shorter", interval: time.Second, timeout: time.Second,
			want: []string{"SW_CHECK_TIMEOUT (Probes.CheckTimeout): 1s must be shorter than CheckInterval (SW_CHECK_INTERVAL), 1s"}},
		{name: "timeout above the default interval", timeout: 5 * time.Second,
			want: []string{"SW_CHECK_TIMEOUT (Probes.CheckTimeout): 5s must be shorter than CheckInterval (SW_CHECK_INTERVAL), 5s"}},
		{name: "interval from the environment too short", env: []string{"SW_CHECK_INTERVAL", "1s"},
			want: []string{"SW_CHECK_TIMEOUT (Probes.CheckTimeout): 2s must be shorter than CheckInterval (SW_CHECK_INTERVAL), 1s"}},
		{name: "bad variable", env: []string{"SW_CHECK_INTERVAL", "0s"},
			want: []string{"SW_CHECK_INTERVAL (CheckInterval): must be positive, got 0s"}},
		{name: "a check's own timing", want: []string{`Checks["db"].Timeout: 2s must be shorter than the check's interval, 1s`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := check
			if strings.HasPrefix(tc.name, "a check's") {
				checks = map[string]health.Check{"db": health.Every(check["db"], time.Second, 0)}
			}
			spec := host.AppSpec{
				ServiceName: "x", Telemetry: quiet(), Checks: checks, CheckInterval: tc.interval,
				Probes: health.ListenerConfig{Disabled: true, CheckTimeout: tc.timeout},
			}
			_, err := host.New(spec, env(tc.env...))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("New = %v, want no error", err)
				}
				return
			}
			var ce *fault.ConfigError
			if !errors.As(err, &ce) || host.ExitCode(err) != host.ExitConfig {
				t.Fatalf("New = %v, want a ConfigError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if len(ce.Problems) != len(tc.want) {
				t.Errorf("%d problems, want %d: %v", len(ce.Problems), len(tc.want), err)
			}
		})
	}
}
