package hooks

import (
	"errors"
	"time"
)

const (
	// AbandonAfter is how long the Host waits for a drain phase whose ctx is done
	// (its window ran out, or the drain was cut short) before abandoning it: its
	// goroutine is left to finish on its own and the next phase runs.
	AbandonAfter = time.Second
	// MinPhaseTime is the least time worth starting a phase with; a phase that would
	// get less is skipped.
	MinPhaseTime = 100 * time.Millisecond
	// ShutdownUnwind is how long the Host still waits for a shutdown hook after its
	// StepTimeout has cancelled its ctx, before abandoning it, so a hook that honours
	// ctx reports its own error instead of being called abandoned. The worst case
	// counts StepTimeout + ShutdownUnwind per hook.
	ShutdownUnwind = 100 * time.Millisecond
)

// ErrPhaseDeadline is the context.Cause of a drain phase's ctx when its own window
// ran out.
var ErrPhaseDeadline = errors.New("drain phase ran out of its allowed time")
