package hooks

import (
	"errors"

	"github.com/servicewright/servicewright/internal/wait"
)

// AbandonAfter is the one grace the framework gives a call whose ctx is done (its
// window ran out, or it was cut short) before abandoning it, still running: the Host
// waits it for a drain hook (then the next phase runs) and, at a stop during
// startup, for a warmup step, a start hook or a Bind; the Kafka consumer for the
// handlers of a generation whose partitions were revoked, and the gRPC server for
// its Stop when the Host gave up on its Serve. A call that honours its ctx returns
// well within it; one that does not is not waited for longer.
const AbandonAfter = wait.AbandonAfter

// ErrDrainHookDeadline is the context.Cause of a drain hook's ctx when its own window
// ran out.
var ErrDrainHookDeadline = errors.New("hooks: drain hook ran out of its allowed time")
