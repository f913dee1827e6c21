package entrypoint

import "fmt"

// Phase is where an entrypoint stands in its own lifecycle. Implementations keep one
// to enforce the Host's call order and to refuse a call out of turn; it only moves
// forward.
type Phase int32

const (
	PhaseNew      Phase = iota // constructed
	PhaseBound                 // Bind returned nil
	PhaseServing               // Serve started taking work
	PhaseDraining              // Drain began: no new intake
	PhaseStopped               // Stop began: everything is cut
)

func (p Phase) String() string {
	switch p {
	case PhaseNew:
		return "new"
	case PhaseBound:
		return "bound"
	case PhaseServing:
		return "serving"
	case PhaseDraining:
		return "draining"
	case PhaseStopped:
		return "stopped"
	}
	return fmt.Sprintf("Phase(%d)", int32(p))
}
