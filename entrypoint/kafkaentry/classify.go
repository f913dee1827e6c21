package kafkaentry

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/servicewright/servicewright/fault"
)

// ErrUndecodable marks a message that no retry can fix, e.g. one whose value does not
// decode. A handler error wrapping it skips the remaining attempts and goes straight
// to Config.OnFailure, labelled "undecodable" (DeadLetterInfo.ErrorType).
//
// An error marked with fault.Permanent does the same for a message that decodes but
// that retrying cannot fix (it breaks a rule, it names an order that does not exist):
// no retry, no outage pause, straight to Config.OnFailure, labelled "permanent".
var ErrUndecodable = errors.New("kafkaentry: undecodable message")

// Poison marks err as a failure of the message itself, never of the world: it is
// retried up to Retry.Attempts and then goes to Config.OnFailure, whatever
// IsTransient would say of it (a timeout caused by the message's size, say). To skip
// the retries, mark it with fault.Permanent instead. Poison(nil) is nil.
func Poison(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, transient: false}
}

// Transient marks err as a failure of the world (a dependency that is down): the
// consumer pauses the message's partition on it instead of counting an attempt.
// Transient(nil) is nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, transient: true}
}

// classified is an error marked by Poison or Transient.
type classified struct {
	err       error
	transient bool
}

func (e *classified) Error() string { return e.err.Error() }
func (e *classified) Unwrap() error { return e.err }

// IsTransient is the default Outage.Classify: it reports whether a handler error is
// about the world rather than the message. In order:
//
//   - an error marked with Poison, fault.Permanent, ErrUndecodable or a panic:
//     false;
//   - an error marked with Transient: true;
//   - context.DeadlineExceeded (a call to a dependency timed out): true;
//   - a net.Error (a refused or reset connection, a dial or read timeout, a name that
//     did not resolve) or a connection errno (ECONNREFUSED, ECONNRESET, EPIPE, …):
//     true;
//   - io.ErrUnexpectedEOF (a connection closed mid-answer): true;
//   - a driver error that says its request was never sent (a SafeToRetry() bool
//     method that returns true, as the PostgreSQL driver pgx has): true;
//   - a driver error with a SQLSTATE (a SQLState() string method) of class 08
//     (connection exception) or 53 (insufficient resources), or 57P01–57P03 (the
//     server shutting down, crashed, or not accepting connections yet): true;
//   - anything else: false.
//
// It matches through wrapping (errors.As), so a handler may wrap driver errors
// freely. It does not import any driver.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if c, ok := errors.AsType[*classified](err); ok {
		return c.transient
	}
	if errors.Is(err, ErrUndecodable) || fault.IsPermanent(err) {
		return false
	}
	if _, ok := errors.AsType[*fault.PanicError](err); ok {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	if s, ok := errors.AsType[interface {
		error
		SafeToRetry() bool
	}](err); ok && s.SafeToRetry() {
		return true
	}
	if s, ok := errors.AsType[interface {
		error
		SQLState() string
	}](err); ok {
		state := s.SQLState()
		return strings.HasPrefix(state, "08") || strings.HasPrefix(state, "53") ||
			state == "57P01" || state == "57P02" || state == "57P03"
	}
	return false
}

// markedOwn reports whether err was marked as the message's own fault (Poison,
// fault.Permanent or ErrUndecodable), which no outage rule may override.
func markedOwn(err error) bool {
	if noRetry(err) {
		return true
	}
	c, ok := errors.AsType[*classified](err)
	return ok && !c.transient
}

// noRetry reports whether err says that retrying the message cannot help
// (fault.Permanent or ErrUndecodable): it goes to Config.OnFailure at once.
func noRetry(err error) bool {
	return errors.Is(err, ErrUndecodable) || fault.IsPermanent(err)
}
