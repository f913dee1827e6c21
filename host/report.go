package host

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/hooks"
)

// report collects what the exit did, for the one-line shutdown report.
type report struct {
	stages    []zap.Field
	phases    hooks.PhasesReport
	drains    []drainRecord
	overruns  []string
	abandoned []string
	failures  []error
}

type drainRecord struct {
	Entrypoint string `json:"entrypoint"`
	InFlight   int    `json:"in_flight_at_start"`
	Left       int    `json:"left"`
	Took       string `json:"took"`
	Error      string `json:"error,omitempty"`
	Detail     string `json:"detail,omitempty"` // from entrypoint.DrainReporter
}

func (r *report) stage(s Stage, d time.Duration) {
	if s >= StageDrainDelay {
		r.stages = append(r.stages, zap.Duration(s.String(), d))
	}
}

func (r *report) drained(name string, before, left int, took time.Duration, err error, detail string) {
	rec := drainRecord{Entrypoint: name, InFlight: before, Left: left, Took: took.String(), Detail: detail}
	if err != nil {
		rec.Error = err.Error()
	}
	r.drains = append(r.drains, rec)
}

func (r *report) overran(what string) { r.overruns = append(r.overruns, what) }
func (r *report) abandon(what string) { r.abandoned = append(r.abandoned, what) }

func (r *report) errs(what string, err error) {
	if err != nil {
		r.failures = append(r.failures, errors.New(what+": "+err.Error()))
	}
}

// log writes the shutdown report: one line with the result (as Shutdown.Result
// reports it: success, failure or timeout), the exit code, each stage's duration and
// what was cut, abandoned or failed.
func (r *report) log(h *Host, res Result, err, cause error, total time.Duration) {
	result := res.String()
	h.tel.metrics.shutdowns.WithLabelValues(result).Inc()
	fields := []zap.Field{
		zap.String("result", result),
		zap.Int("exit_code", ExitCode(err)),
		zap.Duration("total", total),
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
	if cause != nil {
		fields = append(fields, zap.NamedError("cause", cause))
	}
	h.log.Info("shutdown report", fields...)
}
