package fleet

import "fmt"

// Profile is a service's declared deployment posture. It decides which units the Host
// accepts at build time.
type Profile int

const (
	// Single is one process: every unit is accepted. It is the zero value.
	Single Profile = iota
	// Fleet is N replicas of the same service: a unit that mutates shared state must
	// be singleton-guarded.
	Fleet
	// Serverless is a process that may be frozen or reaped between requests: a unit
	// that requires long running is refused.
	Serverless
)

func (p Profile) String() string {
	switch p {
	case Single:
		return "single"
	case Fleet:
		return "fleet"
	case Serverless:
		return "serverless"
	}
	return fmt.Sprintf("Profile(%d)", int(p))
}

// Marks are what a unit's author declares about it: warmup steps, hooks and entrypoint
// registrations carry them. Mutation cannot be detected, so the check is honest by
// declaration: mark what touches shared backends, and the profile enforces the guard.
type Marks struct {
	// MutatesSharedState: running the unit on every replica at once is unsafe
	// (a migration, an index build).
	MutatesSharedState bool
	// SingletonGuarded: the unit runs on one replica at a time (Singleton, OncePerFleet).
	SingletonGuarded bool
	// RequiresLongRunning: the unit needs a process that keeps running between
	// requests (a leadership campaign, a consumer, a scheduler).
	RequiresLongRunning bool
}

// Marker is implemented by units that declare their own marks (a consumer, a
// scheduler, a leadership, a singleton step). The Host merges them with the marks of
// their registration; a unit's own SingletonGuarded cannot be weakened by it.
type Marker interface {
	Marks() Marks
}

// Check reports why a unit with marks m is not allowed under profile p, or "" when it is.
func (p Profile) Check(m Marks) string {
	switch {
	case p == Fleet && m.MutatesSharedState && !m.SingletonGuarded:
		return "mutates shared state but is not singleton-guarded (wrap it with leader.NewSingleton)"
	case p == Serverless && m.RequiresLongRunning:
		return "requires a long-running process, which the serverless profile does not give"
	}
	return ""
}
