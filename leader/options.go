package leader

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/entrypoint"
)

// Reasons a term ends, the `reason` label of servicewright_leadership_terms_ended_total.
const (
	reasonReleased  = "released"  // lead returned nil; the lease was released
	reasonUnclaimed = "unclaimed" // Claim returned false
	reasonFailed    = "failed"    // lead or Claim returned an error or panicked
	reasonLost      = "lost"      // a renewal found the lease gone or taken
	reasonExpired   = "expired"   // no renewal succeeded before the soft deadline
	reasonYielded   = "yielded"   // handed over to a replica that asked
	reasonStopped   = "stopped"   // Drain, Stop, or the Host giving up on Serve
)

type options struct {
	given entrypoint.Telemetry // what WithTelemetry gave; SetDefaults fills in the rest
}

// An Option configures a Leadership.
type Option func(*options)

// WithTelemetry gives the Leadership its telemetry: the logger; the registry for the
// leadership metrics (several Leaderships may share one: they share the collectors,
// told apart by the key label); the tracer provider, which records each term as a
// span "leadership.term" with the key, the owner, the token and the reason it ended;
// and the error reporter, which receives each panic of lead or Claim, recovered as a
// *fault.PanicError with its stack (the term ends "failed" and the replica campaigns
// again), tagged with the entrypoint. Its nil fields are taken from the Host
// (SetDefaults); with neither, the Leadership logs, registers, traces and reports
// nothing. Only the logger of a SingletonStep's telemetry is used.
func WithTelemetry(t entrypoint.Telemetry) Option {
	return func(o *options) { o.given = t.Or(o.given) }
}

func newOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

type metrics struct {
	held       *prometheus.GaugeVec
	ended      *prometheus.CounterVec
	duplicates *prometheus.CounterVec
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
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "servicewright_leadership_duplicate_owner_total",
			Help: "Times this replica found the lease for key held by another process with its own owner id.",
		}, []string{"key"}),
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
	if m.duplicates, err = register(reg, m.duplicates); err != nil {
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
