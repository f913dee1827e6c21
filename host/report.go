package host

import (
	"errors"
	"fmt"
	"time"

	"github.com/servicewright/servicewright/internal/hookrun"
	"github.com/servicewright/servicewright/internal/telemetry"
	"go.uber.org/zap"
)

// report collects what the exit did, for the one-line shutdown report. Each
// overrun and failure also worsens the shutdown's verdict so far (Shutdown.Result),
// until the result is settled; what happens after (the post_shutdown hooks, the
// probe listener closing) is kept apart, in after.
type report struct {
	sd        *Shutdown // nil in tests of the report alone
	settled   bool
	stages    []zap.Field
	phases    hookrun.PhasesReport
	drains    []drainRecord
	overruns  []string
	abandoned []string
	failures  []error
	after     []string // what failed or overran once the result was settled
	cut       string   // what cut the waits short (the Deadline or ForceCleanup), and when
	// startUnwind is how long startup still took after a stop cut a step short: the
	// exit began that much after the stop, so it is not in total.
	startUnwind time.Duration
	lost        []string // telemetry that could not be delivered, by signal: "spans: ..."
}

type drainRecord struct {
	Entrypoint string  `json:"entrypoint"`
	InFlight   int     `json:"in_flight_at_start"`
	Left       int     `json:"left"`
	Took       float64 `json:"took_seconds"` // seconds, as every duration of the JSON log
	Error      string  `json:"error,omitempty"`
	Detail     string  `json:"detail,omitempty"` // from entrypoint.DrainReporter
}

func (r *report) stage(s Stage, d time.Duration) {
	if s >= StageDrainDelay {
		r.stages = append(r.stages, zap.Duration(s.String(), d))
	}
}

func (r *report) drained(name string, before, left int, took time.Duration, err error, detail string) {
	rec := drainRecord{Entrypoint: name, InFlight: before, Left: left, Took: took.Seconds(), Detail: detail}
	if err != nil {
		rec.Error = err.Error()
	}
	r.drains = append(r.drains, rec)
}

func (r *report) overran(what string) {
	if r.settled {
		r.after = append(r.after, what+": overran")
		return
	}
	r.overruns = append(r.overruns, what)
	r.worsen(ResultTimeout)
}

func (r *report) abandon(what string) { r.abandoned = append(r.abandoned, what) }

func (r *report) errs(what string, err error) {
	if err == nil {
		return
	}
	if r.settled {
		r.after = append(r.after, what+": "+err.Error())
		return
	}
	r.failures = append(r.failures, errors.New(what+": "+err.Error()))
	r.worsen(ResultFailure)
}

func (r *report) worsen(res Result) {
	if r.sd != nil {
		r.sd.worsen(res)
	}
}

// log writes the shutdown report: one line with the result (as Shutdown.Result
// reports it: success, failure, timeout or interrupted), the exit code, the total
// from the start of the exit, the start_unwind before it when a stop cut a startup
// step short, each stage's duration, what cut the waits short (cut_short: the
// Deadline or ForceCleanup, and the stage it came in), what was cut, abandoned or
// failed, the telemetry that could not be delivered (telemetry_undelivered), and
// what failed once the result was settled (after_result).
func (r *report) log(h *Host, res Result, err, cause error, total time.Duration) {
	result := res.String()
	fields := []zap.Field{
		zap.String("result", result),
		zap.Int("exit_code", ExitCode(err)),
		zap.Duration("total", total),
	}
	if r.startUnwind > 0 {
		fields = append(fields, zap.Duration("start_unwind", r.startUnwind))
	}
	fields = append(fields, r.stages...)
	if len(r.drains) > 0 {
		fields = append(fields, zap.Any("drains", r.drains))
	}
	if len(r.phases.Phases) > 0 {
		phases := make([]string, 0, len(r.phases.Phases))
		for _, p := range r.phases.Phases {
			phases = append(phases, fmt.Sprintf("%s:%s:%s", p.Name, p.Outcome, p.Duration))
		}
		fields = append(fields, zap.Strings("drain_phase_outcomes", phases))
	}
	if len(r.overruns) > 0 {
		fields = append(fields, zap.Strings("overran", r.overruns))
	}
	if len(r.abandoned) > 0 {
		fields = append(fields, zap.Strings("abandoned", r.abandoned))
	}
	if len(r.failures) > 0 {
		fields = append(fields, zap.Errors("cleanup_errors", r.failures))
	}
	if r.cut != "" {
		fields = append(fields, zap.String("cut_short", r.cut))
	}
	if len(r.lost) > 0 {
		fields = append(fields, zap.Strings("telemetry_undelivered", r.lost))
	}
	if len(r.after) > 0 {
		fields = append(fields, zap.Strings("after_result", r.after))
	}
	if cause != nil {
		fields = append(fields, zap.NamedError("cause", cause))
	}
	h.log.Info(telemetry.ReportMessage, fields...)
}
