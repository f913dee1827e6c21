package cronentry

import (
	"cmp"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
)

// defaultName is the Scheduler's name when Config.Name is empty.
const defaultName = "cron"

// Config configures a Scheduler. Every zero field takes the default its doc states.
type Config struct {
	// Name identifies the Scheduler in logs, metrics (the entrypoint label) and
	// errors. Default "cron".
	Name string
}

// resolve fills in the defaults and records every problem in l, each under its
// field's name: an empty Name is "cron", and no field has a wrong value.
func (c Config) resolve(*fault.Problems) Config {
	c.Name = cmp.Or(c.Name, defaultName)
	return c
}

// An Option adds an optional part to a Scheduler.
type Option func(*options)

type options struct {
	tel entrypoint.Telemetry
}

// WithTelemetry gives the Scheduler its logger, metrics registry, tracer provider
// and error reporter; a nil field is taken from the Host (SetDefaults), and one
// neither gives is off. Given twice, the later option's fields win. The propagator
// is not used.
//
//   - Logger: runs that fail, panic or are skipped, and the lifecycle. None:
//     nothing is logged.
//   - Registerer: servicewright_cron_runs_total{job,outcome} and
//     servicewright_cron_run_duration_seconds{job}, each with the constant label
//     entrypoint=Name. Outcomes are ok, failed, panicked, cancelled,
//     skipped_overlap, skipped_other_replica, skipped_missed, skipped_draining,
//     lock_error, skipped_lock_lost and skipped_claimed; every tick counts once.
//     None: no metric is kept. A registration that fails is a problem of the field
//     WithTelemetry in New's *fault.ConfigError.
//   - TracerProvider: each run is a span "cron.run", with the job (cron.job), the
//     tick (cron.scheduled, cron.missed, cron.token) and the outcome
//     (cron.outcome); a run that fails or panics records its error. The run's ctx
//     holds the span. A tick that does not run (skipped, or another replica's)
//     makes no span. None: no span.
//   - Reporter: each run that fails or panics — a panic as the *fault.PanicError
//     with the job's stack — tagged with the entrypoint, the "job", the tick's
//     "scheduled" time (RFC 3339, UTC), the "outcome" ("failed" or "panicked")
//     and the trace id of the run's span. A run cut by the stop is not reported.
//     None: failures are only logged and counted.
func WithTelemetry(t entrypoint.Telemetry) Option {
	return func(o *options) { o.tel = t.Or(o.tel) }
}
