package host_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
)

// journal records what happened, in order, across entrypoints, hooks and steps.
type journal struct {
	mu    sync.Mutex
	lines []string
	h     *host.Host // set once built, to record readiness
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
}

// addReady records line with the readiness at that moment.
func (j *journal) addReady(line string) {
	st := health.StatusUnavailable
	j.mu.Lock()
	h := j.h
	j.mu.Unlock()
	if h != nil {
		st = h.Readiness()
	}
	j.add("%s [%s]", line, st)
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.lines)
}

func (j *journal) setHost(h *host.Host) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.h = h
}

// fake is an entrypoint whose behaviour each test sets; by default every method
// succeeds at once and Serve returns at stop.
type fake struct {
	name string
	j    *journal

	bind  func(ctx context.Context) error
	serve func(ctx context.Context, stop <-chan struct{}) error
	drain func(ctx context.Context) error
	stopF func(ctx context.Context) error

	inFlight atomic.Int32
}

var _ entrypoint.Entrypoint = (*fake)(nil)

func newFake(name string, j *journal) *fake { return &fake{name: name, j: j} }

func (f *fake) Name() string  { return f.name }
func (f *fake) InFlight() int { return int(f.inFlight.Load()) }

func (f *fake) Bind(ctx context.Context) error {
	f.j.addReady(f.name + ".Bind")
	if f.bind != nil {
		return f.bind(ctx)
	}
	return nil
}

func (f *fake) Serve(ctx context.Context, stop <-chan struct{}) error {
	if f.serve != nil {
		return f.serve(ctx, stop)
	}
	<-stop
	return nil
}

func (f *fake) Drain(ctx context.Context) error {
	f.j.addReady(f.name + ".Drain")
	if f.drain != nil {
		return f.drain(ctx)
	}
	return nil
}

func (f *fake) Stop(ctx context.Context) error {
	f.j.addReady(f.name + ".Stop")
	if f.stopF != nil {
		return f.stopF(ctx)
	}
	return nil
}
