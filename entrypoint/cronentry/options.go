package cronentry

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// An Option configures a Scheduler.
type Option func(*options)

type options struct {
	log        *zap.Logger
	registerer prometheus.Registerer
}

// WithLogger sets the logger for runs that fail, panic or are skipped, and for the
// lifecycle. The default discards everything.
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
// skipped_lock_lost and skipped_claimed; every tick counts once. Without it no metric is kept.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(o *options) { o.registerer = r }
}
