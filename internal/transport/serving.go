package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/internal/wait"
)

// Bind is a transport's Bind under its base's lock: it checks base is new (an
// ErrOutOfTurn error otherwise), takes ln or listens on addr (see Listen), and marks
// base bound. A failure to listen leaves base new, so Bind may be tried again.
func Bind(ctx context.Context, base *entrypoint.Base, ln net.Listener, addr, name string) (net.Listener, error) {
	if err := base.Bind(); err != nil {
		return nil, err
	}
	ln, err := Listen(ctx, ln, addr, name)
	if err != nil {
		return nil, err
	}
	base.Bound()
	return ln, nil
}

// Serving is a transport's serving goroutine — http.Server.Serve or grpc.Server.Serve
// on the bound listener — and the rules both transports follow around it: its
// failure is reported once, by Serve or by Drain; when the Host gives up on Serve,
// the server is cut and waited for at most wait.AbandonAfter (wait.ServeUntil);
// Stop waits for it no longer than its ctx. The zero Serving is not usable; make one
// with NewServing.
type Serving struct {
	name   string // the entrypoint's
	what   string // `entrypoint "api" http.Server`, in panics and errors
	closed error  // what serve returns once the server was closed on purpose

	mu   sync.Mutex
	done chan struct{} // closed when serve has returned; nil before Start
	err  error         // serve's failure, until taken
}

// NewServing returns the Serving of the entrypoint called name, whose server (say
// "http.Server") returns closed from its Serve once it was closed on purpose.
func NewServing(name, server string, closed error) *Serving {
	return &Serving{name: name, what: fmt.Sprintf("entrypoint %q %s", name, server), closed: closed}
}

// Start runs serve in a goroutine of its own and returns the channel closed once
// serve has returned. What serve returns, unless nil or closed, is its failure; a
// panic is one too. Start is called once.
func (sv *Serving) Start(serve func() error) chan struct{} {
	done := make(chan struct{})
	sv.mu.Lock()
	sv.done = done
	sv.mu.Unlock()
	go func() {
		defer close(done)
		err := safe.Call(sv.what, serve)
		if err != nil && !errors.Is(err, sv.closed) {
			sv.mu.Lock()
			sv.err = err
			sv.mu.Unlock()
		}
	}()
	return done
}

// Done returns the channel closed once serve has returned, or nil before Start.
func (sv *Serving) Done() <-chan struct{} {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.done
}

// TakeErr returns serve's failure once, so that Serve and Drain do not both report
// it; nil when there is none, or it was taken.
func (sv *Serving) TakeErr() error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	err := sv.err
	sv.err = nil
	return err
}

// Refused explains err, the base's refusal of a Serve (an ErrOutOfTurn error), when
// serve has already returned on its own: http.Server.Serve and grpc.Server.Serve
// close the listener they serve when they return, and only Bind opens one, so the
// transport cannot serve again and says so (the Host then leaves it failed). Any
// other err is returned as it is.
func (sv *Serving) Refused(err error) error {
	done := sv.Done()
	if err == nil || done == nil {
		return err
	}
	select {
	case <-done:
		return fmt.Errorf("%s cannot serve again: it closed its listener when it failed, and only Bind opens one (restart the process): %w", sv.what, err)
	default:
		return err
	}
}

// Until is the tail of a transport's Serve, once Start has run: it returns nil when
// stop closes, with the server still serving; serve's failure, as "name: serve: …",
// when serve returned first (nil when Drain or Stop closed the server); and when ctx
// is done first — the Host has given up — it calls cut, which must close the server
// and everything it serves without waiting, and follows wait.ServeUntil's rule: the
// serving goroutine is waited for at most wait.AbandonAfter, and ctx.Err() is
// returned, joined with an error wrapping fault.ErrAbandoned when it did not return.
func (sv *Serving) Until(ctx context.Context, stop <-chan struct{}, cut func()) error {
	done := sv.Done()
	if err := wait.ServeUntil(ctx, sv.what, stop, done, func() <-chan struct{} { cut(); return done }); err != nil {
		return err
	}
	select {
	case <-done:
		if err := sv.TakeErr(); err != nil {
			return fmt.Errorf("%s: serve: %w", sv.name, err)
		}
	default:
	}
	return nil
}

// Wait is Stop's wait for the serving goroutine, once the server was closed: nil once
// it has returned (at once before Start), or an error wrapping ctx.Err() that says it
// did not return.
func (sv *Serving) Wait(ctx context.Context) error {
	if err := wait.Await(ctx, sv.Done()); err != nil {
		return fmt.Errorf("%s: stop: %s did not return: %w", sv.name, sv.what, err)
	}
	return nil
}
