package leader

import (
	"github.com/servicewright/servicewright/lock"

	"sync"
	"sync/atomic"
	"time"
)

// Term is one replica's hold on the lease, from the acquire to the end of its lead
// call. lead receives it; its methods are safe for concurrent use.
type Term struct {
	Key   string
	Owner string
	// Token is the lease's fencing token. Pass it with every write the body makes,
	// and have the store refuse a token lower than the highest it has seen.
	Token uint64

	deadline atomic.Int64 // soft deadline, ns since start (monotonic)
	start    time.Time    // carries the monotonic reading deadline counts from
	endOnce  sync.Once
	ended    chan struct{}
}

func newTerm(l lock.Lease, deadline time.Time) *Term {
	t := &Term{Key: l.Key, Owner: l.Owner, Token: l.Token, start: time.Now(), ended: make(chan struct{})}
	t.setDeadline(deadline)
	return t
}

func (t *Term) setDeadline(d time.Time) { t.deadline.Store(int64(d.Sub(t.start))) }

// Deadline returns the term's soft deadline: the moment by which the body must have
// been told to stop for the grace, the unwind and the release to finish before the
// lease could lapse (with Margin to spare). Each successful renewal moves it to
// renewal-sent + TTL − Margin − YieldGrace − ReleaseTimeout, measured from when the
// renewal was sent, so a slow answer shortens the term rather than lengthening it.
func (t *Term) Deadline() time.Time { return t.start.Add(time.Duration(t.deadline.Load())) }

// Live reports whether the term is still on: Ended is not closed and the clock is
// before the soft deadline. It reads the clock itself, so a body that checks it
// between units stops at its first check after a pause (a GC stall, a frozen VM, a
// blocked goroutine) that carried it past the deadline, before the leadership's own
// timer has run. It cannot stop a unit already in progress; fencing does that.
func (t *Term) Live() bool {
	select {
	case <-t.ended:
		return false
	default:
	}
	return time.Since(t.start) < time.Duration(t.deadline.Load())
}

// Ended is closed when the term is ending: the body must finish its unit and return
// within YieldGrace, after which its ctx is cancelled.
func (t *Term) Ended() <-chan struct{} { return t.ended }

func (t *Term) end() { t.endOnce.Do(func() { close(t.ended) }) }
