package leader

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
)

// Reasons a term ends, the `reason` label of servicewright_leadership_terms_ended_total.
const (
	ReasonReleased  = "released"  // lead returned nil; the lease was released
	ReasonUnclaimed = "unclaimed" // Claim returned false
	ReasonFailed    = "failed"    // lead or Claim returned an error or panicked
	ReasonLost      = "lost"      // a renewal found the lease gone or taken
	ReasonExpired   = "expired"   // no renewal succeeded before the soft deadline
	ReasonYielded   = "yielded"   // handed over to a replica that asked
	ReasonStopped   = "stopped"   // Drain, Stop, or the Host giving up on Serve
)

type config struct {
	log                    *zap.Logger
	reg                    prometheus.Registerer
	backoffInit, backoffMx time.Duration
	problems               fault.Problems
}

// An Option configures a Leadership.
type Option func(*config)

// WithLogger sets the logger. The default discards everything.
func WithLogger(l *zap.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithRegisterer registers the leadership metrics with reg. Several Leaderships may
// share one registerer; they share the collectors, told apart by the key label.
func WithRegisterer(reg prometheus.Registerer) Option {
	return func(c *config) { c.reg = reg }
}

// WithBackoff sets the wait after a term whose body failed: it starts at initial,
// doubles after each consecutive failure up to max, and each wait is drawn from the
// upper half of its step. Defaults: entrypoint.DefaultBackoffInitial and
// entrypoint.DefaultBackoffMax.
func WithBackoff(initial, max time.Duration) Option {
	return func(c *config) {
		if initial <= 0 {
			c.problems.Addf("backoff.initial", "must be positive, got %v", initial)
		}
		if max < initial {
			c.problems.Addf("backoff.max", "must be at least backoff.initial (%v), got %v", initial, max)
		}
		c.backoffInit, c.backoffMx = initial, max
	}
}

func newConfig(opts []Option) *config {
	c := &config{log: zap.NewNop(), backoffInit: entrypoint.DefaultBackoffInitial, backoffMx: entrypoint.DefaultBackoffMax}
	for _, o := range opts {
		o(c)
	}
	return c
}

type metrics struct {
	held  *prometheus.GaugeVec
	ended *prometheus.CounterVec
}

// newMetrics makes the collectors and registers them with reg when it is not nil,
// reusing collectors another Leadership registered already.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "servicewright_leadership_held",
			Help: "1 while this replica holds the lease for key, 0 otherwise.",
		}, []string{"key"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "servicewright_leadership_terms_ended_total",
			Help: "Terms this replica ended, by key and reason (released, unclaimed, failed, lost, expired, yielded, stopped).",
		}, []string{"key", "reason"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.held, err = register(reg, m.held)
	if err != nil {
		return nil, err
	}
	if m.ended, err = register(reg, m.ended); err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
