package leader

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

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

// ErrConfig marks an error as a configuration error: wrap it (fmt.Errorf("...: %w",
// leader.ErrConfig)) in what a Leadership callback returns, and the Leadership stops
// campaigning for good instead of retrying. A *fault.ConfigError counts too.
var ErrConfig = errors.New("leader: configuration error")

type options struct {
	log      *zap.Logger
	reg      prometheus.Registerer
	tracer   trace.TracerProvider
	reporter fault.Reporter
}

// An Option configures a Leadership.
type Option func(*options)

// WithLogger sets the logger. Without it the Leadership logs through the logger its
// Host hands it (SetDefaults), and discards everything with neither.
func WithLogger(l *zap.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithRegisterer registers the leadership metrics with reg. Several Leaderships may
// share one registerer; they share the collectors, told apart by the key label.
// Without it the metrics go to the registry the Leadership's Host hands it
// (SetDefaults); with neither, nothing is registered.
func WithRegisterer(reg prometheus.Registerer) Option {
	return func(o *options) { o.reg = reg }
}

// WithTracerProvider records each term as a span "leadership.term" from tp, with
// the key, the owner, the token and the reason it ended. Without it the Leadership
// uses the tracer provider its Host hands it (SetDefaults); with neither, it records
// nothing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) {
		if tp != nil {
			o.tracer = tp
		}
	}
}

// WithReporter sends each panic of lead or Claim, recovered as a *fault.PanicError
// with its stack (the term ends "failed" and the replica campaigns again), to r,
// tagged with the entrypoint. Without it the Leadership uses the error reporter its
// Host hands it (SetDefaults); with neither, such panics are only logged. A nil r is
// ignored.
func WithReporter(r fault.Reporter) Option {
	return func(o *options) {
		if r != nil {
			o.reporter = r
		}
	}
}

func newOptions(opts []Option) *options {
	o := &options{log: zap.NewNop(), tracer: noop.NewTracerProvider()}
	for _, f := range opts {
		f(o)
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
