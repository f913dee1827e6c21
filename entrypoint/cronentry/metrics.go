package cronentry

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// outcome is what became of one tick. Every tick the scheduler reaches ends in
// exactly one outcome.
type outcome int

const (
	succeeded           outcome = iota // the run returned nil
	failed                             // the run returned an error (MaxRunTime expiry included)
	panicked                           // the run panicked
	cancelled                          // Stop cut the run (or the lock's Acquire) through its ctx
	skippedOverlap                     // the previous run still ran (OverlapSkip), or a newer tick replaced this queued one
	skippedOtherReplica                // another replica took the tick's lease
	skippedMissed                      // the scheduler reached the tick late (Job.SkipMissed), or too late to claim it once per fleet
	skippedDraining                    // the tick came, or waited in the queue, when Drain or Stop had begun
	lockError                          // the fleet lock could not be asked (backend down); the tick did not run here
	skippedLockLost                    // the fleet lock lost its data since this replica last looked; the tick may have run before the loss
	skippedClaimed                     // FleetLock.Claim found the tick claimed in the store already
	numOutcomes
)

func (o outcome) String() string {
	switch o {
	case succeeded:
		return "ok"
	case failed:
		return "failed"
	case panicked:
		return "panicked"
	case cancelled:
		return "cancelled"
	case skippedOverlap:
		return "skipped_overlap"
	case skippedOtherReplica:
		return "skipped_other_replica"
	case skippedMissed:
		return "skipped_missed"
	case skippedDraining:
		return "skipped_draining"
	case lockError:
		return "lock_error"
	case skippedLockLost:
		return "skipped_lock_lost"
	case skippedClaimed:
		return "skipped_claimed"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// jobStats counts one job's outcomes, and feeds its Prometheus collectors when there
// are any.
type jobStats struct {
	counts   [numOutcomes]atomic.Uint64
	counters [numOutcomes]prometheus.Counter // nil without a registerer
	duration prometheus.Observer             // nil without a registerer
}

func (js *jobStats) add(o outcome, n int) {
	js.counts[o].Add(uint64(n))
	if c := js.counters[o]; c != nil {
		c.Add(float64(n))
	}
}

func (js *jobStats) observe(d time.Duration) {
	if js.duration != nil {
		js.duration.Observe(d.Seconds())
	}
}

// count returns how many ticks ended in o.
func (js *jobStats) count(o outcome) uint64 { return js.counts[o].Load() }

// newStats makes each job's counters and, when r is not nil, registers
// servicewright_cron_runs_total{cron_job,outcome} and
// servicewright_cron_run_duration_seconds{cron_job}, with the constant label
// entrypoint=name. Every job×outcome series exists from the start, at zero.
func newStats(r prometheus.Registerer, name string, jobs []*job) error {
	for _, j := range jobs {
		j.stats = &jobStats{}
	}
	if r == nil {
		return nil
	}
	labels := prometheus.Labels{"entrypoint": name}
	runs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "servicewright", Subsystem: "cron", Name: "runs_total", ConstLabels: labels,
		Help: "Ticks of each job by outcome: ok, failed, panicked, cancelled, skipped_overlap, skipped_other_replica, skipped_missed, skipped_draining, lock_error, skipped_lock_lost, skipped_claimed.",
	}, []string{"cron_job", "outcome"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "servicewright", Subsystem: "cron", Name: "run_duration_seconds", ConstLabels: labels,
		Help:    "How long each run of a job took, whatever its outcome (skipped ticks excluded).",
		Buckets: []float64{0.01, 0.05, 0.25, 1, 5, 15, 60, 300, 900}, // a quick sweep to a long report
	}, []string{"cron_job"})
	var errs []error
	for _, c := range []prometheus.Collector{runs, duration} {
		if err := r.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	for _, j := range jobs {
		for o := range numOutcomes {
			j.stats.counters[o] = runs.WithLabelValues(j.Name, o.String())
		}
		j.stats.duration = duration.WithLabelValues(j.Name)
	}
	return nil
}
