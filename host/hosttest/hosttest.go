package hosttest

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/servicewright/servicewright/host"
)

// Harness runs one service in-process, as Host.Run would in main, and records the
// stages it goes through.
type Harness struct {
	h       *host.Host
	started atomic.Bool
	done    chan struct{}
	err     error

	mu     sync.Mutex
	events []host.Event
	notify chan struct{} // closed and replaced at each event
}

// Start builds spec and runs it; it is New followed by Harness.Start.
func Start(t testing.TB, spec host.AppSpec, opts ...host.Option) *Harness {
	t.Helper()
	x := New(t, spec, opts...)
	x.Start()
	return x
}

// New builds spec without running it, so a test can reach the Host first. To keep
// tests hermetic it disables the probe listener, logs to t, and reads no environment
// variable (pass host.WithEnv to give it some). It fails t at once if host.New fails
// (call host.New directly to test a ConfigError). When t ends, a service still
// running is stopped and awaited.
func New(t testing.TB, spec host.AppSpec, opts ...host.Option) *Harness {
	t.Helper()
	spec.Probes.Disabled = true
	if spec.Telemetry.Logger == nil {
		spec.Telemetry.Logger = zaptest.NewLogger(t)
	}
	x := &Harness{done: make(chan struct{}), notify: make(chan struct{})}
	all := append([]host.Option{
		host.WithEnv(func(string) (string, bool) { return "", false }),
		host.WithObserver(x.observe),
	}, opts...)
	h, err := host.New(spec, all...)
	if err != nil {
		t.Fatalf("hosttest: %v", err)
	}
	x.h = h
	t.Cleanup(func() {
		if x.started.Load() {
			h.Shutdown().Begin()
			<-x.done
		}
	})
	return x
}

// Start runs the service in a goroutine the Harness owns. It may be called once.
func (x *Harness) Start() {
	if !x.started.CompareAndSwap(false, true) {
		panic("hosttest: Start called twice")
	}
	go func() {
		defer close(x.done)
		x.err = x.h.Run(context.Background())
	}()
}

func (x *Harness) observe(e host.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.events = append(x.events, e)
	close(x.notify)
	x.notify = make(chan struct{})
}

// Host returns the Host under test.
func (x *Harness) Host() *host.Host { return x.h }

// Stop begins a graceful shutdown, as a first SIGTERM would, and returns at once.
func (x *Harness) Stop() { x.h.Shutdown().Begin() }

// Wait waits for Run to return and returns its error.
func (x *Harness) Wait() error {
	<-x.done
	return x.err
}

// Done is closed when Run has returned.
func (x *Harness) Done() <-chan struct{} { return x.done }

// Events returns every stage event so far.
func (x *Harness) Events() []host.Event {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.events)
}

// Stages returns the stages entered so far, in order.
func (x *Harness) Stages() []host.Stage {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]host.Stage, len(x.events))
	for i, e := range x.events {
		out[i] = e.Stage
	}
	return out
}

// WaitStage blocks until the Host has entered stage s, and reports whether it did;
// false means Run returned without reaching it.
func (x *Harness) WaitStage(s host.Stage) bool {
	for {
		x.mu.Lock()
		for _, e := range x.events {
			if e.Stage == s {
				x.mu.Unlock()
				return true
			}
		}
		ch := x.notify
		x.mu.Unlock()
		select {
		case <-ch:
		case <-x.done:
			return slices.Contains(x.Stages(), s)
		}
	}
}
