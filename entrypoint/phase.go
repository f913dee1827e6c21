package entrypoint

import "fmt"

// phase is where an entrypoint stands in its own lifecycle. Base keeps one to enforce
// the Host's call order and to refuse a call out of turn; it only moves forward, but
// for Rearm. Entrypoints see it through Base's transitions (Turn) and its Unbound and
// Serving reports.
type phase int32

const (
	phaseNew      phase = iota // constructed
	phaseBound                 // Bind returned nil
	phaseServing               // Serve started taking work
	phaseDraining              // Drain began: no new intake
	phaseStopped               // Stop began: everything is cut
)

func (p phase) String() string {
	switch p {
	case phaseNew:
		return "new"
	case phaseBound:
		return "bound"
	case phaseServing:
		return "serving"
	case phaseDraining:
		return "draining"
	case phaseStopped:
		return "stopped"
	}
	return fmt.Sprintf("phase(%d)", int32(p))
}
