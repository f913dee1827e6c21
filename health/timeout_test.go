package health_test

import (
	"errors"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

// TestProbeTimeoutSetBelowZeroIsRefused: a check timeout that is set is refused
// unless positive, naming CheckTimeout, by both constructors; left at zero it takes
// its default timeout, 2s.
func TestProbeTimeoutSetBelowZeroIsRefused(t *testing.T) {
	for _, d := range []time.Duration{-time.Nanosecond, -time.Second} {
		_, merr := health.NewMonitor(health.MonitorConfig{CheckTimeout: d}, ready())
		_, rerr := health.NewReadiness(health.ReadinessConfig{CheckTimeout: d}, ready())
		for what, err := range map[string]error{"NewMonitor": merr, "NewReadiness": rerr} {
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || len(ce.Problems) != 1 || ce.Problems[0].Field != "CheckTimeout" {
				t.Errorf("%s with CheckTimeout %v = %v, want one problem on CheckTimeout", what, d, err)
			}
		}
	}
	if _, err := health.NewMonitor(health.MonitorConfig{}, ready()); err != nil {
		t.Errorf("NewMonitor with CheckTimeout unset = %v, want the default", err)
	}
	if _, err := health.NewReadiness(health.ReadinessConfig{}, ready()); err != nil {
		t.Errorf("NewReadiness with CheckTimeout unset = %v, want the default", err)
	}
}
