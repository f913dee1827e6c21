package fault

import "errors"

// ErrInterrupted is the cause of a task's ctx when a stop (a signal, the caller's ctx,
// Shutdown.Begin) arrives before its work is done, and what the Host returns, wrapped,
// when the service ends with a task unfinished. The exit it gives is non-zero and
// retriable: a run cut short must never count as a success.
var ErrInterrupted = errors.New("fault: interrupted before the work was done")
