package host

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
)

// A service with a task (an entrypoint.Finite, such as entrypoint.Task) ends when its
// work ends. The rules, beside the rest of the sequence:
//
//   - A task's Serve returning nil before the stop means "done", not
//     entrypoint.ErrReturnedEarly. When every task is done the Host begins the shutdown itself,
//     and the orderly exit runs as after a SIGTERM; Run returns nil (exit 0).
//   - A task's failure always ends the service, whatever its Registration says; Run
//     returns the *EntrypointError, and ExitCode honours the task's own code (1, or
//     its permanent code).
//   - When the service ends with a task not Finished — a stop during startup, or
//     before the work was done — Run returns an error wrapping fault.ErrInterrupted
//     (ExitInterrupted), never nil, and the report's result is "interrupted".

// finite returns e's entrypoint as a task, if it is one.
func (e *entry) finite() (entrypoint.Finite, bool) {
	return e.caps.Finite, e.caps.Finite != nil
}

// taskDone handles a Serve that returned before the stop. It reports false when res
// is not a finished task (the caller treats it as a failure), and true otherwise,
// with end true once every task is done.
func (r *run) taskDone(res serveResult) (done, end bool) {
	f, ok := res.e.finite()
	if !ok || res.err != nil || !f.Finished() {
		return false, false
	}
	res.e.set(entryFinished)
	r.h.log.Info("task done", zap.String("task", res.e.name))
	for _, e := range r.h.entries {
		if t, ok := e.finite(); ok && !t.Finished() {
			return true, false
		}
	}
	r.h.log.Info("every task is done; shutting down")
	return true, true
}

// essential reports whether e's failure ends the service: a task's always does.
func essential(e *entry) bool {
	_, task := e.finite()
	return task || !e.reg.NonEssential
}

// interrupted returns an error wrapping fault.ErrInterrupted naming the tasks that
// did not finish, or nil when every task finished or there is none.
func (r *run) interrupted() error {
	var names []string
	for _, e := range r.h.entries {
		if t, ok := e.finite(); ok && !t.Finished() {
			names = append(names, e.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	r.h.log.Warn("stopped before every task was done; the run counts as interrupted",
		zap.Strings("tasks", names))
	return fmt.Errorf("task %q: %w", names, fault.ErrInterrupted)
}

// onlyTasks reports whether every entrypoint is a task, so that no traffic is routed
// here and a zero DrainDelay costs nothing.
func (h *Host) onlyTasks() bool {
	for _, e := range h.entries {
		if _, ok := e.finite(); !ok {
			return false
		}
	}
	return len(h.entries) > 0
}
