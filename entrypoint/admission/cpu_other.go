//go:build !unix

package admission

import "time"

// processCPU is not read on this platform: a saturation then ends only on a run
// of windows that refused nothing, and the run queue's bound does not grow (see
// Limiter.saturation).
func processCPU() (time.Duration, bool) { return 0, false }
