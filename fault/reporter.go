package fault

import "context"

// Reporter sends errors to an error-tracking service (Sentry, say). The Host is given
// one through its telemetry configuration, sets it up before anything else and
// flushes it last; components that see a failure worth a person's attention (a
// recovered panic, a dead-lettered message) report through the same one.
//
// Implementations must be safe for concurrent use, and Report must not wait on the
// network: it queues the event and returns.
type Reporter interface {
	// Report queues err for sending, with tags such as "service", "instance",
	// "entrypoint", "stage" and "trace_id". When err is or wraps a *PanicError,
	// its Stack is the stack to show. ctx may carry the active span.
	Report(ctx context.Context, err error, tags map[string]string)
	// Flush sends what is queued and returns when it is sent or when ctx is done,
	// whichever is first; in the second case it returns ctx's error.
	Flush(ctx context.Context) error
}

// Tag keys the Host sets on every report it makes.
const (
	TagService    = "service"
	TagInstance   = "instance"
	TagEntrypoint = "entrypoint"
	TagStage      = "stage"
	TagTraceID    = "trace_id"
	TagSpanID     = "span_id"
)
