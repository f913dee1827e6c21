package hooks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/servicewright/servicewright/fleet"
)

// Func is a hook: application code run at one of the Host's hook points. It should
// return when ctx is done.
type Func func(ctx context.Context) error

// Kind is one of the four hook points.
type Kind int

const (
	// PreStart hooks run after warmup, before Bind; fail-fast.
	PreStart Kind = iota
	// PostStart hooks run after readiness turns true; fail-fast.
	PostStart
	// PreShutdown hooks run after entrypoints stopped, scope still open; best-effort.
	PreShutdown
	// PostShutdown hooks run after the scope closed and telemetry flushed; best-effort.
	PostShutdown
)

// String returns the name used in logs and errors: "pre_start", "post_start",
// "pre_shutdown" or "post_shutdown".
func (k Kind) String() string {
	switch k {
	case PreStart:
		return "pre_start"
	case PostStart:
		return "post_start"
	case PreShutdown:
		return "pre_shutdown"
	case PostShutdown:
		return "post_shutdown"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Hook is a named Func with the fleet marks its author declares for it.
type Hook struct {
	Name  string // names the hook in logs and errors; must be non-empty
	Run   Func   // must be non-nil
	Marks fleet.Marks
}

// DrainHook is work run once while the replica still serves but no longer receives new
// routing; the package documentation says how the Host splits their shared budget.
type DrainHook struct {
	Name  string // names the phase in logs and in the report; must be non-empty
	Order int    // phases run in ascending Order; equal Orders run in registration order
	// MaxDuration caps this phase's share of the budget. 0 means it may take whatever
	// is left, so give early phases a cap or one slow phase starves the later ones.
	MaxDuration time.Duration
	// Run does the work. allowed is the time it was given — min(MaxDuration, budget
	// left) — and equals the time to ctx's deadline, so it can fit its own window
	// (for example, spread closing N connections over allowed). When ctx is done it
	// must return promptly; it is abandoned AbandonAfter later otherwise.
	Run   func(ctx context.Context, allowed time.Duration) error
	Marks fleet.Marks
}

// Registry collects hooks and drain hooks at build time. The zero value is an empty
// registry ready to use, and its methods are safe for concurrent use.
//
// Registration neither validates nor panics: an empty name, a nil function or a negative
// MaxDuration is stored as given, and the Host reports it as a ConfigError. A Registry
// must not be copied after first use.
type Registry struct {
	mu     sync.Mutex
	hooks  map[Kind][]Hook
	phases []DrainHook
}

// AddPreStart registers a hook run after warmup, before Bind. Only the first marks value
// is used; further ones are ignored.
func (r *Registry) AddPreStart(name string, fn Func, marks ...fleet.Marks) {
	r.Add(PreStart, hook(name, fn, marks))
}

// AddPostStart registers a hook run after readiness turns true. Only the first marks
// value is used.
func (r *Registry) AddPostStart(name string, fn Func, marks ...fleet.Marks) {
	r.Add(PostStart, hook(name, fn, marks))
}

// AddPreShutdown registers a hook run after entrypoints stopped, while the application
// scope is open. Only the first marks value is used.
func (r *Registry) AddPreShutdown(name string, fn Func, marks ...fleet.Marks) {
	r.Add(PreShutdown, hook(name, fn, marks))
}

// AddPostShutdown registers a hook run after the scope closed and telemetry flushed.
// Only the first marks value is used.
func (r *Registry) AddPostShutdown(name string, fn Func, marks ...fleet.Marks) {
	r.Add(PostShutdown, hook(name, fn, marks))
}

func hook(name string, fn Func, marks []fleet.Marks) Hook {
	h := Hook{Name: name, Run: fn}
	if len(marks) > 0 {
		h.Marks = marks[0]
	}
	return h
}

// Add registers h under kind, after the hooks already registered there. A kind other
// than the four constants is kept and returned by Hooks, but the Host never runs it.
func (r *Registry) Add(kind Kind, h Hook) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hooks == nil {
		r.hooks = make(map[Kind][]Hook)
	}
	r.hooks[kind] = append(r.hooks[kind], h)
}

// AddDrainHook registers a drain hook.
func (r *Registry) AddDrainHook(p DrainHook) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases = append(r.phases, p)
}

// Hooks returns a copy of the hooks registered under kind, in registration order.
func (r *Registry) Hooks(kind Kind) []Hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.hooks[kind])
}

// DrainHooks returns a copy of the drain hooks sorted by ascending Order; phases with
// the same Order keep their registration order.
func (r *Registry) DrainHooks() []DrainHook {
	r.mu.Lock()
	ps := slices.Clone(r.phases)
	r.mu.Unlock()
	slices.SortStableFunc(ps, func(a, b DrainHook) int { return cmp.Compare(a.Order, b.Order) })
	return ps
}
