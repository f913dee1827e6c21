package host

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

// AddCheck adds a readiness check after New, for a dependency built with what the
// Host built first (a client made with its Logger or Registerer, say): it joins
// AppSpec.Checks and the container's, exactly as if it had been declared there.
// /readyz runs it, the Monitor (already handed to the entrypoints and the container)
// evaluates it, and a failure degrades readiness, or withdraws it when c was declared
// with health.Gating.
//
// An empty name, a name with a comma or surrounding spaces, a nil c, or a name
// already used by another check is a *fault.ConfigError naming Checks[name], and
// nothing is added. AddCheck must be called before Run; afterwards it returns an
// error wrapping ErrRegisterAfterRun and the check is not added.
func (h *Host) AddCheck(name string, c health.Check) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ran.Load() {
		return fmt.Errorf("readiness check %q: %w", name, ErrRegisterAfterRun)
	}
	field := fmt.Sprintf("Checks[%q]", name)
	if _, dup := h.checks[name]; dup {
		return fault.Invalid(field, "name is used by more than one check")
	}
	// The Monitor validates as New does, and serves /readyz: one check, one verdict.
	if err := h.monitor.AddCheck(name, c); err != nil {
		return err
	}
	h.checks[name] = c
	return nil
}

// Monitor returns the Host's readiness as a health.Monitor: the verdicts of the
// readiness probe (/readyz) — the Host's state, draining from the stop or
// BeginDraining on, and AppSpec.Checks with those of the container — for a transport
// other than HTTP. The Host hands it to every registered entrypoint that implements
// health.MonitorUser, and supplies it to the container.
func (h *Host) Monitor() *health.Monitor { return h.monitor }

// buildMonitor makes the Host's Monitor over its readiness and checks (spec and
// container), once: the container's constructor and New share it. A check the
// validation refuses (a nil one, an empty name) is left out here; New reports it.
func (h *Host) buildMonitor(extra []namedCheck) (*health.Monitor, error) {
	if h.monitor != nil {
		return h.monitor, nil
	}
	checks := make(map[string]health.Check, len(h.checks)+len(extra))
	for name, c := range h.checks {
		checks[name] = c
	}
	for _, c := range extra {
		checks[c.Name] = c.Check
	}
	for name, c := range checks {
		if name == "" || c == nil {
			delete(checks, name)
		}
	}
	m, err := health.NewMonitor(health.MonitorConfig{
		Checks:        checks,
		CheckTimeout:  cmp.Or(max(h.spec.Probes.CheckTimeout, 0), defaultCheckTimeout),
		CheckInterval: cmp.Or(h.spec.CheckInterval, defaultCheckInterval),
		Logger:        h.log.Named("health"),
		// The gauge of each check that fails, gating or not: a degraded replica
		// stays in rotation, so the metric is how an operator sees it.
		Registerer: h.tel.reg,
	}, readiness{h})
	if err != nil {
		return nil, err
	}
	h.monitor = m
	h.monitored = make(map[string]bool, len(checks))
	for name := range checks {
		h.monitored[name] = true
	}
	return m, nil
}

// settleMonitor builds the Monitor if the container did not, and gives it every
// check New accepted that it was not built with (one a container added with
// Builder.Check without handing it to Builder.Monitor), so that /readyz, which the
// Monitor serves, runs AppSpec.Checks and the container's.
func (h *Host) settleMonitor() error {
	if _, err := h.buildMonitor(nil); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(h.checks)) {
		if !h.monitored[name] {
			if err := h.monitor.AddCheck(name, h.checks[name]); err != nil {
				return err
			}
			h.monitored[name] = true
		}
	}
	return nil
}

// The Host's check timing when AppSpec.CheckInterval and Probes.CheckTimeout are
// left at zero (the same as a health.Monitor's own): the Host hands its Monitor the
// values it resolved, so these alone decide its timing.
const (
	defaultCheckInterval = 5 * time.Second
	defaultCheckTimeout  = 2 * time.Second
)

// checkTiming applies SW_CHECK_INTERVAL over spec.CheckInterval and checks it
// against the checks' timeout (Probes.CheckTimeout, with SW_CHECK_TIMEOUT already
// applied): a negative interval, or a timeout not shorter than the interval, is a
// problem naming both fields and their variables. It returns the interval to use: on
// a problem, one the Monitor accepts, so that the problem is reported once.
func checkTiming(lookup func(string) (string, bool), spec *AppSpec, l *fault.Problems) time.Duration {
	interval := spec.CheckInterval
	if v, ok := lookup("SW_CHECK_INTERVAL"); ok && strings.TrimSpace(v) != "" {
		got, err := parseDuration(v, false)
		switch {
		case err != nil:
			l.AddEnvf("CheckInterval", "SW_CHECK_INTERVAL", "%v (want e.g. \"5s\" or \"500ms\")", err)
		case got <= 0:
			l.AddEnvf("CheckInterval", "SW_CHECK_INTERVAL", "must be positive, got %s", got)
		case got > maxBudget:
			l.AddEnvf("CheckInterval", "SW_CHECK_INTERVAL", "%s is above the ceiling of %s", got, maxBudget)
		default:
			interval = got
		}
	}
	if interval < 0 {
		l.AddEnvf("CheckInterval", "SW_CHECK_INTERVAL", "must not be negative, got %s (leave it 0 for the default, %s)", interval, defaultCheckInterval)
		return 0
	}
	timeout := cmp.Or(max(spec.Probes.CheckTimeout, 0), defaultCheckTimeout)
	if i := cmp.Or(interval, defaultCheckInterval); timeout >= i {
		l.AddEnvf("Probes.CheckTimeout", "SW_CHECK_TIMEOUT",
			"%s must be shorter than CheckInterval (SW_CHECK_INTERVAL), %s: each check runs one at a time, every interval", timeout, i)
		return timeout + time.Second // only to build the Monitor: New fails
	}
	return interval
}

// Changed makes the Host's readiness a health.Notifier, so that a Monitor follows it
// without polling: the channel is closed at the next change of the state startup
// reached, which the Host withdraws at the stop (before the drain delay) and at
// BeginDraining or PreStop.
func (r readiness) Changed() <-chan struct{} { return r.h.state.Changed() }
