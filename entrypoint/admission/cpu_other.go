//go:build !unix

package admission

import "time"

// processCPU is not read on this platform: the share's pace then grows only on a
// long run of quiet windows (see Limiter.saturation).
func processCPU() (time.Duration, bool) { return 0, false }
