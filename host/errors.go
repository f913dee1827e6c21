package host

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/telemetry"
)

// Exit codes: the one place they are declared. README.md's table lists each, and a
// test holds the two together.
const (
	ExitOK = 0
	// ExitFailure: startup failed (a container constructor or OnStart hook, a
	// warmup, a start hook, a Bind), an essential entrypoint failed, a cleanup step
	// failed, or the exit overran a budget.
	ExitFailure = 1
	// ExitQuit is what Go's runtime exits with on SIGQUIT, after writing every
	// goroutine's stack to stderr; the Host leaves SIGQUIT to it.
	ExitQuit   = 2
	ExitConfig = 78 // EX_CONFIG: the spec or the environment is invalid
	// ExitPermanent is a task's default exit code for a failure marked by
	// fault.Permanent (entrypoint.TaskConfig.PermanentExitCode changes it).
	ExitPermanent = 3
	// ExitInterrupted (EX_TEMPFAIL) is the exit code of a run stopped before its
	// tasks were done: non-zero, and worth retrying.
	ExitInterrupted = 75
	// ExitSignal is added to the signal's number on a second stop signal: 130 for
	// SIGINT, 143 for SIGTERM, 129 for SIGHUP.
	ExitSignal = 128
)

var (
	// ErrShutdownTimeout is returned by Run when the exit itself overran: the
	// Deadline expired (the error and the report's cut_short name the stage it
	// expired in), a drain outlived its window, a step overran its StepTimeout
	// (whether it returned late or was abandoned), or a cooperative wait ended
	// without MarkApplicationDrained. It is returned only when nothing else failed
	// first. The report's result is then "timeout".
	ErrShutdownTimeout = errors.New("host: shutdown did not finish within its budgets")

	// ErrCleanupFailed is returned by Run when a cleanup step failed — a
	// pre_shutdown hook, a warmup step's Stop, closing the container — and nothing
	// caused the shutdown first. The report's result is then "failure". A flush
	// that cannot deliver telemetry is not a failure (the report names it under
	// telemetry_undelivered), nor is a post_shutdown hook's, which runs after the
	// result is settled (the report names it under after_result).
	ErrCleanupFailed = errors.New("host: shutdown cleanup failed")

	// ErrWarmupTimeout is wrapped by the startup error of a warmup step still
	// running when Budgets.WarmupTimeout expired.
	ErrWarmupTimeout = errors.New("host: warmup budget spent")
)

// errAlreadyRun is returned by a second call to Host.Run: a mistake in the program,
// not an outcome to branch on.
var errAlreadyRun = errors.New("host: Run called more than once")

// EntrypointError is the cause of a shutdown forced by an essential entrypoint.
type EntrypointError struct {
	Entrypoint string
	Err        error
}

func (e *EntrypointError) Error() string {
	return fmt.Sprintf("entrypoint %q failed: %v", e.Entrypoint, e.Err)
}

func (e *EntrypointError) Unwrap() error { return e.Err }

// StartupError is returned by Run when a startup step failed; Stage names the step.
type StartupError struct {
	Stage Stage
	Err   error
}

func (e *StartupError) Error() string { return fmt.Sprintf("startup failed at %s: %v", e.Stage, e.Err) }

func (e *StartupError) Unwrap() error { return e.Err }

// ExitCode maps an error returned by New, Run or Host.Run to a process exit code:
// 0 for nil, ExitConfig for a *fault.ConfigError, the code of an error in the chain
// with an ExitCode() int method (a task's permanent failure is one), ExitInterrupted
// for fault.ErrInterrupted, ExitFailure for anything else. (A second signal exits with
// 128+signum directly; see signalHandler.)
func ExitCode(err error) int {
	var ce *fault.ConfigError
	var coded interface{ ExitCode() int }
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce):
		return ExitConfig
	case errors.As(err, &coded) && coded.ExitCode() > 0 && coded.ExitCode() < 256:
		return coded.ExitCode()
	case errors.Is(err, fault.ErrInterrupted):
		return ExitInterrupted
	default:
		return ExitFailure
	}
}

// fallbackLogger is the logger of last resort, for a configuration error found
// before the Host's own logger exists: JSON on stderr, as the Host's logger writes.
func fallbackLogger(service string) *zap.Logger {
	return telemetry.FallbackLogger().With(zap.String("service", service))
}
