package fault

import "errors"

// Permanent marks err as a failure that retrying cannot fix: bad input data, a schema
// the work does not understand, a record that violates a rule. A task that returns it
// ends the service with the task's permanent exit code instead of the retriable 1, so
// a Kubernetes Job's podFailurePolicy can fail the Job at once rather than spend its
// backoffLimit. No servicewright component retries it: the Kafka consumer
// dead-letters the message at once (no retry, no outage pause, labelled
// "permanent"), entrypoint.Loop ends and its Serve returns it, and leadership stops
// campaigning. Permanent(nil) is nil. The mark survives further wrapping with %w.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsPermanent reports whether err, or any error it wraps, was marked by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return "permanent: " + e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }
