package wait

import (
	"context"
	"sync"
)

// Group owns goroutines and lets their owner wait for all of them, with a deadline:
// unlike a sync.WaitGroup, its Wait can give up. The zero Group is ready to use and
// must not be copied after first use.
type Group struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0
}

// Go runs f in a goroutine the Group counts.
func (g *Group) Go(f func()) {
	g.enter()
	go func() {
		defer g.exit()
		f()
	}()
}

// Track counts a goroutine the caller starts itself (one that a library starts for
// it, say) and returns the function that goroutine must call, once, when it returns.
// Call Track before starting the goroutine, so that a Wait cannot miss it.
func (g *Group) Track() (exit func()) {
	g.enter()
	var once sync.Once
	return func() { once.Do(g.exit) }
}

func (g *Group) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n++
}

func (g *Group) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		close(g.idle)
	}
}

// Running reports how many goroutines of the Group have not returned.
func (g *Group) Running() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// Wait returns nil once no goroutine of the Group runs, or ctx.Err() when ctx is
// done first; the goroutines then go on, still counted. A goroutine started while
// Wait waits is waited for too.
func (g *Group) Wait(ctx context.Context) error {
	for {
		g.mu.Lock()
		n, idle := g.n, g.idle
		g.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
