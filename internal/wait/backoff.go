package wait

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is a jittered exponential schedule for retries: each wait is drawn
// uniformly from the upper half of its step, [step/2, step], and the step starts at
// Initial and doubles after each wait up to Max. Replicas that fail together thus do
// not retry together, and while the steps double no wait is shorter than the one
// before it. Reset brings the step back to Initial, after a success.
//
// The zero Backoff waits nothing. Initial must be positive and Max at least Initial;
// the packages that take them from a user check that at construction. A Backoff is
// not safe for concurrent use.
type Backoff struct {
	Initial, Max time.Duration
	step         time.Duration // 0 until the first Next or after Reset
}

// Next returns the wait before the next attempt and doubles the step.
func (b *Backoff) Next() time.Duration {
	if b.step <= 0 {
		b.step = b.Initial
	}
	if b.step <= 0 {
		return 0
	}
	wait := b.step/2 + rand.N(b.step/2+1)
	b.step = min(b.step*2, b.Max)
	if b.step <= 0 { // overflowed past math.MaxInt64
		b.step = b.Max
	}
	return wait
}

// Reset brings the step back to Initial.
func (b *Backoff) Reset() { b.step = 0 }

// Jitter draws uniformly from [d-jitter, d+jitter], clamped to [0, MaxInt64]. A
// jitter of zero or less returns d.
func Jitter(d, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return d
	}
	f := float64(d) + (2*rand.Float64()-1)*float64(jitter)
	switch {
	case f <= 0:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(f)
}
