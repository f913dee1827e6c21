package hooks

import (
	"errors"
	"time"

	"github.com/servicewright/servicewright/internal/wait"
)

const (
	// AbandonAfter is the one grace the framework gives a call whose ctx is done
	// (its window ran out, or it was cut short) before abandoning it, still running:
	// the Host waits it for a drain phase (then the next phase runs) and, at a stop
	// during startup, for a warmup step, a start hook or a Bind; the Kafka consumer for the handlers of a generation whose partitions were
	// revoked, and the gRPC server for its Stop when the Host gave up on its Serve. A call that honours its ctx returns well within it; one that
	// does not is not waited for longer.
	AbandonAfter = wait.AbandonAfter
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
var ErrPhaseDeadline = errors.New("hooks: drain phase ran out of its allowed time")
