package host

import (
	"context"
	"errors"
	"fmt"
)

// closer is a close step added with OnClose.
type closer struct {
	name  string
	close func(ctx context.Context) error
}

// OnClose adds a close step for something the caller opened before Run and that the
// service uses until it stops: a connection pool, a producer, a lock's client. It is
// plain wiring's counterpart of an fx OnStop hook.
//
// Close steps run at the close_scope stage, after every entrypoint has stopped, the
// pre_shutdown hooks have run and the warmup steps have been undone, and after the
// container's scope has closed: in the reverse order of the OnClose calls, each with
// its own StepTimeout, the next one running even when one fails or overruns. A step
// that fails or overruns is named in the shutdown report and makes the result
// failure or timeout, as any cleanup step does. They run on every exit of Run,
// startup failures included, since what they close was opened before Run. The
// logged worst case counts StepTimeout for each.
//
// name identifies the step in logs and the report and must not be empty; close must
// not be nil. OnClose must be called before Run; afterwards it returns
// ErrRegisterAfterRun and the step is not added.
func (h *Host) OnClose(name string, close func(ctx context.Context) error) error {
	if name == "" || close == nil {
		return errors.New("host: OnClose needs a name and a close func")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ran.Load() {
		return fmt.Errorf("close step %q: %w", name, ErrRegisterAfterRun)
	}
	h.closers = append(h.closers, closer{name, close})
	return nil
}
