package host

import (
	"context"
	"fmt"
	"time"

	"github.com/servicewright/servicewright/internal/safe"
)

// serveGroup owns the Serve goroutines of one run and their results. A Serve that
// never returns is abandoned when the Host stops waiting for it; its goroutine ends
// when it does, its result going to the buffered channel.
type serveGroup struct {
	ctx     context.Context // the Serve ctx: cancelled after every Stop
	cancel  context.CancelFunc
	stop    <-chan struct{} // closed at the stop request
	results chan serveResult
	pending int // Serve calls started and not yet collected
}

type serveResult struct {
	e   *entry
	err error
}

// newServeGroup makes a group for n Serve calls; every result has room in the
// channel, so even an abandoned Serve's goroutine ends when its Serve does.
func newServeGroup(parent context.Context, stop <-chan struct{}, n int) *serveGroup {
	ctx, cancel := context.WithCancel(parent)
	return &serveGroup{ctx: ctx, cancel: cancel, stop: stop, results: make(chan serveResult, n)}
}

// start runs e's Serve in a goroutine of the group.
func (g *serveGroup) start(e *entry) {
	g.pending++
	go func() {
		err := safe.Call(fmt.Sprintf("entrypoint %q Serve", e.name), func() error {
			return e.reg.Entrypoint.Serve(g.ctx, g.stop)
		})
		g.results <- serveResult{e, err}
	}()
}

// collect hands each result to fn until every Serve has returned or limit passes; it
// reports whether every Serve returned.
func (g *serveGroup) collect(limit time.Duration, fn func(serveResult)) bool {
	t := time.NewTimer(limit)
	defer t.Stop()
	for g.pending > 0 {
		select {
		case res := <-g.results:
			g.pending--
			fn(res)
		case <-t.C:
			return false
		}
	}
	return true
}
