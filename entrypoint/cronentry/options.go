package cronentry

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
)

// DefaultName is the Scheduler's name when Config.Name is empty.
const DefaultName = "cron"

// Config configures a Scheduler. Every zero field takes the default named after it.
type Config struct {
	// Name identifies the Scheduler in logs, metrics (the entrypoint label) and
	// errors. Default "cron".
	Name string
}

// An Option adds an optional part to a Scheduler.
type Option func(*options)

type options struct {
	log        *zap.Logger
	registerer prometheus.Registerer
	tracer     trace.TracerProvider
	reporter   fault.Reporter
}

// WithLogger sets the logger for runs that fail, panic or are skipped, and for the
// lifecycle. Without it the Scheduler uses the logger its Host hands it (see
// entrypoint.DefaultsUser), and discards everything when there is none. A nil
// logger is ignored.
func WithLogger(l *zap.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithRegisterer registers the Scheduler's metrics with r:
// servicewright_cron_runs_total{job,outcome} and
// servicewright_cron_run_duration_seconds{job}, each with the constant label
// entrypoint=Name. Outcomes are ok, failed, panicked, cancelled, skipped_overlap,
// skipped_other_replica, skipped_missed, skipped_draining, lock_error,
// skipped_lock_lost and skipped_claimed; every tick counts once. Without it the
// Scheduler registers them with the registry its Host hands it, and keeps no metric
// when there is none. A nil r is ignored.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(o *options) {
		if r != nil {
			o.registerer = r
		}
	}
}

// WithTracerProvider makes each run a span "cron.run" of tp, with the job
// (cron.job), the tick (cron.scheduled, cron.missed, cron.token) and the outcome
// (cron.outcome); a run that fails or panics records its error. The run's ctx holds
// the span. A tick that does not run (skipped, or another replica's) makes no span.
// Without it the Scheduler uses the tracer provider its Host hands it; with neither,
// no span is made. A nil tp is ignored.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) {
		if tp != nil {
			o.tracer = tp
		}
	}
}

// WithReporter sends each run that fails or panics to r — a panic as the
// *fault.PanicError with the job's stack — tagged with the entrypoint, the job, the
// tick's scheduled time, the outcome and the trace id of the run's span. A run cut by
// the stop is not reported. Without it the Scheduler uses the error reporter its Host
// hands it; with neither, failures are only logged and counted. A nil r is ignored.
func WithReporter(r fault.Reporter) Option {
	return func(o *options) {
		if r != nil {
			o.reporter = r
		}
	}
}
