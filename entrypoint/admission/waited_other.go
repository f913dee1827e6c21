//go:build !linux

package admission

import "time"

// processWaited is not read on this platform: the CPU time a neighbour held is
// taken for idle time (see Limiter.saturation).
func processWaited() time.Duration { return 0 }
