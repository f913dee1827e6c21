package health

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// result is one check's answer and when it was taken.
type result struct {
	res CheckResult
	at  time.Time
}

// slot holds one check's last result and the way to run it early.
type slot struct {
	last  atomic.Pointer[result] // nil until the first answer
	since atomic.Int64           // when its background runs began (UnixNano), for staleness before a first answer
	poke  chan struct{}          // buffered 1: run now (Recheck)
}

// background runs each check on its own interval, one run at a time per check, so
// that the probes read the last results instead of running the checks: whatever the
// number of probes, a dependency sees one query per interval. The zero value has not
// started; start begins the runs and stop ends them.
type background struct {
	mu      sync.Mutex
	ctx     context.Context // nil until start
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	on      atomic.Bool   // started, even after stop: the answers come from the results
	changed chan struct{} // closed at the next change of a result; nil until asked for
}

// started reports whether the background runs began.
func (b *background) started() bool { return b.on.Load() }

// start begins a run loop for each of e's checks; later ones (add) get theirs as they
// come. A second start, or a start after stop, does nothing.
func (b *background) start(e *evaluator) {
	b.mu.Lock()
	if b.ctx != nil {
		b.mu.Unlock()
		return
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.on.Store(true)
	b.mu.Unlock()
	e.addMu.Lock() // no add between the list and the loops it gets
	defer e.addMu.Unlock()
	for _, c := range e.list() {
		b.spawn(e, c)
	}
}

// spawn starts c's loop if the runs are going.
func (b *background) spawn(e *evaluator, c namedCheck) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == nil || b.ctx.Err() != nil {
		return
	}
	c.st.since.Store(time.Now().UnixNano())
	ctx := b.ctx
	b.wg.Go(func() { e.loop(ctx, c) })
}

// stop ends the runs and waits for their loops; a Health call still running is
// abandoned (its ctx is cancelled) and ends on its own. The results are kept.
func (b *background) stop() {
	b.mu.Lock()
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithCancel(context.Background())
	}
	cancel := b.cancel
	b.mu.Unlock()
	cancel()
	b.wg.Wait()
}

// wake returns a channel closed at the next change of a check's result.
func (b *background) wake() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.changed
}

// notify wakes whoever waits on wake.
func (b *background) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// loop runs c at once and then every c.interval, from the start of one run to the
// start of the next, until ctx ends or the Source is Draining (which is final: no
// answer needs the checks any more). A run that outlives its timeout is recorded as
// timed out at the timeout, and the next run waits for its Health call to return, so
// that a hung dependency never has more than one check of ours waiting on it.
func (e *evaluator) loop(ctx context.Context, c namedCheck) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.st.poke:
		}
		if c.st.last.Load() != nil && e.status() == StatusDraining {
			return
		}
		began := time.Now()
		_, running, _ := e.once(ctx, c)
		if running != nil {
			select {
			case <-running:
			case <-ctx.Done():
				return
			}
		}
		t.Reset(max(c.interval-time.Since(began), 0))
	}
}

// lastResults reads the last result of each check, with its age; a check without one
// yet is "pending", and one without an answer for staleAfter intervals is stale. Both
// count as failures.
func (e *evaluator) lastResults(checks []namedCheck) []CheckResult {
	now := time.Now()
	out := make([]CheckResult, len(checks))
	for i, c := range checks {
		r := c.st.last.Load()
		if r == nil {
			out[i] = CheckResult{Detail: "pending"}
			if since := c.st.since.Load(); since != 0 && now.Sub(time.Unix(0, since)) > staleAfter*c.interval {
				out[i].Stale = true
			}
			continue
		}
		res := r.res
		age := now.Sub(r.at)
		res.Age = age.Round(time.Millisecond).String()
		if age > staleAfter*c.interval {
			res.OK, res.Stale = false, true
		}
		out[i] = res
	}
	return out
}

// awaitFirst waits until every check has a result, or ctx ends.
func (e *evaluator) awaitFirst(ctx context.Context) error {
	for {
		wake := e.bg.wake()
		all := true
		for _, c := range e.list() {
			if c.st.last.Load() == nil {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
