package entrypoint

import (
	"context"
	"time"
)

// Entrypoint is anything that takes work from outside the process: a listener, a
// consumer, a scheduler, a leader's loop.
//
// The Host calls the methods in the order Bind, Serve, Drain, Stop, each at most once,
// and never calls Drain or Stop on an entrypoint whose Bind was not called or failed.
// A method that panics is treated as if it had returned an error naming the entrypoint.
type Entrypoint interface {
	// Name identifies the entrypoint in logs, metrics, probes and errors. It must be
	// unique within a service and must not change.
	Name() string

	// Bind acquires what the entrypoint needs to take work — it opens sockets,
	// subscribes, registers schedules — but accepts nothing yet. An error aborts
	// startup; the Host then tears down only the entrypoints already bound.
	Bind(ctx context.Context) error

	// Serve takes work until stop is closed, then returns nil soon after, STILL
	// accepting: the listener stays open and the consumer keeps its assignment,
	// because the Host withdraws readiness and waits out the drain delay before it
	// calls Drain. ctx is cancelled only when the Host gives up on the entrypoint.
	//
	// Returning before stop is closed, with or without an error, is a failure of the
	// entrypoint: for an essential one the service shuts down and exits non-zero.
	Serve(ctx context.Context, stop <-chan struct{}) error

	// Drain stops intake and lets work in flight finish. New work that still arrives
	// is refused in a way the sender may retry elsewhere (an HTTP 503, an
	// uncommitted offset). Drain returns when nothing is in flight or when ctx's
	// deadline passes, whichever is first; on expiry it returns ctx.Err() and leaves
	// what is still running to Stop.
	Drain(ctx context.Context) error

	// Stop releases everything the entrypoint holds, cutting off whatever Drain left
	// running. It must return by ctx's deadline; one that does not is abandoned by
	// the Host, reported, and does not keep other entrypoints from stopping.
	Stop(ctx context.Context) error
}

// InFlighter is implemented by entrypoints that can say how much work they hold. The
// Host shows the figure in /debug/lifecycle and in the shutdown report.
type InFlighter interface {
	InFlight() int
}

// DrainReporter is implemented by entrypoints that can say, in a few words, what their
// Drain did ("finished=3 committed=120 released=0"). The Host puts it in the shutdown
// report beside the entrypoint's name.
type DrainReporter interface {
	DrainReport() string
}

// StatusDetailer is implemented by entrypoints that can say in a few words why they
// are not taking work right now ("paused: broker unreachable"). The Host shows it
// beside the entrypoint's state in /debug/lifecycle.
type StatusDetailer interface {
	StatusDetail() string
}

// DrainTimer is implemented by entrypoints whose work may need a known time to end
// once Drain asks it to (a leader's term ends at most this long after the drain
// began). The Host refuses, at construction, a DrainGrace shorter than that time.
type DrainTimer interface {
	DrainTime() time.Duration
}
