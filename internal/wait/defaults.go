package wait

import (
	"time"

	"github.com/servicewright/servicewright/fault"
)

// The framework's defaults for a retry schedule and a periodic wait's jitter. They
// live here so that each package taking a schedule from a user (entrypoint's Loop,
// cronentry's jobs, leader's retry) defaults it alike; each states the value in its
// field's doc.
const (
	// BackoffInitial and BackoffMax fill the zero fields of a user's retry schedule
	// (entrypoint.Backoff); a Max left zero is at least the Initial given.
	BackoffInitial = 100 * time.Millisecond
	BackoffMax     = 30 * time.Second
	// JitterFraction is the share of their period by which periodic waits are
	// jittered unless told otherwise: a Loop's wait after a unit and a cron tick's
	// delay.
	JitterFraction = 0.1
)

// CheckJitterFraction records in l, under field, a jitter fraction outside [0, 1):
// a negative spread means nothing, and one of a whole period or more lets two waits
// swap order. NaN is refused too.
func CheckJitterFraction(l *fault.Problems, field string, f float64) {
	if !(f >= 0 && f < 1) {
		l.Addf(field, "must lie in [0, 1), got %v", f)
	}
}
