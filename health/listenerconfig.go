package health

import (
	"cmp"
	"net"
	"strconv"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// ListenerConfig configures the Host's probe listener (host.AppSpec.Probes): the port
// of its own on which the Host serves /readyz, /livez, /startupz, /metrics and
// /debug/lifecycle. The zero value listens on :8079 with 2 s per check.
type ListenerConfig struct {
	Addr     string // host:port; "" means ":8079"
	Disabled bool   // no listener at all (the process serves probes itself)
	// CheckTimeout is each readiness check's own budget. Zero, the field left unset,
	// means 2s; a value set below zero is refused with a ConfigError naming
	// CheckTimeout, as no check can answer within it.
	CheckTimeout time.Duration
}

// Validate returns a *fault.ConfigError naming each bad field: a negative CheckTimeout, an
// Addr that is not host:port with a numeric port. Fields are checked even when
// Disabled.
func (c ListenerConfig) Validate() error {
	var l fault.Problems
	c.resolve(&l)
	return l.Err()
}

// resolve fills c's defaults and records each problem in l under its field.
func (c ListenerConfig) resolve(l *fault.Problems) ListenerConfig {
	validateTimeout(l, c.CheckTimeout)
	c.CheckTimeout = cmp.Or(max(c.CheckTimeout, 0), defaultCheckTimeout)
	if c.Addr == "" {
		c.Addr = ":8079"
		return c
	}
	_, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		l.Addf("Addr", "must be host:port, got %q: %v", c.Addr, err)
		return c
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		l.Addf("Addr", "port must be a number from 0 to 65535, got %q", port)
	}
	return c
}
