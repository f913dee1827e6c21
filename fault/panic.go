package fault

import (
	"errors"
	"fmt"
)

// PanicError is the error a recovered panic becomes.
type PanicError struct {
	What  string // what panicked, e.g. `entrypoint "http" Serve`
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack, as runtime/debug.Stack gives it
}

func (e *PanicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.What, e.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is sees through it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ErrAbandoned is wrapped by the error of a call that did not return within its
// allowance (its deadline plus a short grace). The call's goroutine was left to
// finish on its own and its eventual result discarded.
var ErrAbandoned = errors.New("fault: abandoned: did not return in time")
