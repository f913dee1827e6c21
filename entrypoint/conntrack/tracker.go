package conntrack

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/transport"
	"github.com/servicewright/servicewright/internal/wait"
)

// The defaults of the Config fields left at zero, which their docs state.
const (
	defaultGoodbyeTimeout     = time.Second
	defaultIdleCloseWindow    = 5 * time.Second
	defaultBacklogReadTimeout = time.Second
)

// Config is what a Tracker does at the drain. Zero fields take the defaults.
type Config struct {
	// Name names the entrypoint in errors and in the cap's warnings.
	Name string

	// MaxConns caps the connections open at once. At the cap the Listener stops
	// accepting: new connections wait in the listen backlog, costing no
	// descriptor, and are accepted as open ones close. Zero takes a default
	// derived from the process's file-descriptor limit (384 at 1024); negative is
	// a ConfigError. With WithListenerLayer the layer caps instead, and MaxConns
	// must be zero.
	MaxConns int

	// Goodbye, when set, is written to an idle connection just before the drain
	// closes it: a line protocol's "server going away", so that the client knows
	// to reconnect elsewhere rather than seeing a bare end of stream.
	Goodbye []byte

	// GoodbyeTimeout bounds the write of Goodbye (default 1s).
	GoodbyeTimeout time.Duration

	// IdleCloseWindow is the longest span over which Drain closes the idle
	// connections, a few at a time (entrypoint.Spread), so that their clients
	// reconnect to the other replicas gradually (default 5s;
	// it is shortened to fit the drain's ctx).
	IdleCloseWindow time.Duration

	// BacklogReadTimeout is how long a connection taken from the accept queue by
	// the drain (DrainBacklog) may read: its reads fail once that much time has
	// passed since its accept, whatever read deadline the entrypoint sets (a later
	// one is brought forward to it). Such a connection is answered and closed, and
	// at the cap the queue is taken only as places free up, so without this a slow
	// client would hold its place for the entrypoint's whole header timeout, and a
	// queue of them would hold the drain for that timeout once per cap's worth of
	// connections. Clients already queued at the drain have most often sent their
	// request, which is then read at once. Default 1s.
	BacklogReadTimeout time.Duration
}

// An Option adds an optional part to a Tracker.
type Option func(*options)

type options struct {
	layer func(net.Listener) net.Listener
}

// WithListenerLayer has Listener put layer between the socket (after taking over
// its accept queue) and the Tracker, in place of the Tracker's own connection cap:
// an entrypoint that already caps its connections (and exports the cap's metrics)
// passes its cap here. Config.MaxConns must then be zero.
func WithListenerLayer(layer func(net.Listener) net.Listener) Option {
	return func(o *options) { o.layer = layer }
}

// A Tracker follows the connections of one listener, so that a drain answers every
// request a client sent and closes what is idle. Make one with New, wrap the
// listener with Listener, mark each connection idle between requests (Conn.Idle),
// and call Drain from the entrypoint's Drain and Close from its Stop.
type Tracker struct {
	cfg  Config
	opts options
	cap  *transport.ConnCap // nil with a layer

	busy   entrypoint.Gate // one unit per busy connection; never closed
	serial entrypoint.Gate // one unit per busy connection not multiplexed

	draining atomic.Bool // Drain began: a connection going idle is closed
	// counting: busy and serial count the connections, from the first Drain, Wait or
	// WaitSerial on (count); counted once every connection was brought in. Before
	// that a request's moves between busy and idle touch only its connection.
	counting  atomic.Bool
	counted   atomic.Bool
	countOnce sync.Once
	accepting atomic.Bool // Accept was called: an accept loop runs

	closedIdle        atomic.Uint64
	closedAfterAnswer atomic.Uint64
	lateInput         atomic.Uint64
	busyAtDeadline    atomic.Int64 // -1 until a Drain ran out of time

	mu    sync.Mutex
	conns map[*Conn]struct{} // open and followed
	seq   uint64
	ln    *Listener
}

// New checks cfg and returns a Tracker. It returns a *fault.ConfigError listing
// every problem, with its field, when cfg is invalid.
func New(cfg Config, opts ...Option) (*Tracker, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var l fault.Problems
	transport.Default(&l, "GoodbyeTimeout", &cfg.GoodbyeTimeout, defaultGoodbyeTimeout)
	transport.Default(&l, "IdleCloseWindow", &cfg.IdleCloseWindow, defaultIdleCloseWindow)
	transport.Default(&l, "BacklogReadTimeout", &cfg.BacklogReadTimeout, defaultBacklogReadTimeout)
	if o.layer != nil && cfg.MaxConns != 0 {
		l.Addf("MaxConns", "must be zero with WithListenerLayer (the layer caps), got %d", cfg.MaxConns)
	}
	transport.Default(&l, "MaxConns", &cfg.MaxConns, transport.DefaultMaxConns())
	if err := l.Err(); err != nil {
		return nil, err
	}
	t := &Tracker{cfg: cfg, opts: o, conns: make(map[*Conn]struct{})}
	t.busyAtDeadline.Store(-1)
	if o.layer == nil {
		t.cap = transport.NewConnCap(cfg.MaxConns, nil)
	}
	return t, nil
}

// Listener returns ln followed by the Tracker: each connection its Accept returns
// is a *Conn, busy until its first request is answered. When ln is a
// *net.TCPListener or a *net.UnixListener (on Linux), the Listener takes over its
// accept queue, so that DrainBacklog hands over the connections the kernel queued
// instead of resetting them. Call it once, before serving; the Tracker owns ln
// from then on.
func (t *Tracker) Listener(ln net.Listener) *Listener {
	l := &Listener{t: t, sock: ln, inner: ln}
	if bl := takeOver(ln); bl != nil {
		l.backlog, l.inner = bl, bl
	}
	switch {
	case t.opts.layer != nil:
		l.inner = t.opts.layer(l.inner)
	default:
		l.inner = t.cap.Listener(l.inner)
	}
	t.mu.Lock()
	t.ln = l
	t.mu.Unlock()
	return l
}

// Busy reports how many connections are busy.
func (t *Tracker) Busy() int {
	if t.counted.Load() {
		return t.busy.InFlight()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for c := range t.conns {
		if counted(c.state.Load()) {
			n++
		}
	}
	return n
}

// count makes the Gates count the busy connections from now on, for Drain, Wait
// and WaitSerial: each connection is brought in under its lock after counting is
// set, so that one moving at the same time is counted either by its own recount or
// here. Concurrent callers return once it is done.
func (t *Tracker) count() {
	t.countOnce.Do(func() {
		t.counting.Store(true)
		for _, c := range t.snapshot(-1) {
			c.mu.Lock()
			c.recount()
			c.mu.Unlock()
		}
		t.counted.Store(true)
	})
}

// Open reports how many connections are open and followed (not detached).
func (t *Tracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// Wait returns nil as soon as no connection is busy, or ctx.Err() if ctx is done
// first. It does not poll: the connection that goes idle or closes last wakes it.
// A connection accepted later makes no difference to a Wait that returned.
func (t *Tracker) Wait(ctx context.Context) error {
	t.count()
	return t.busy.Wait(ctx)
}

// WaitSerial is Wait for the connections not marked Multiplexed: it returns once
// each has answered its request, or is closed, idle or detached.
func (t *Tracker) WaitSerial(ctx context.Context) error {
	t.count()
	return t.serial.Wait(ctx)
}

// DrainBacklog stops intake without cutting what is queued: the Listener's Accept
// hands over, without waiting, every connection the kernel has queued, then closes
// the socket and returns an error wrapping net.ErrClosed. A listener it could not
// take over is closed at once (its queue, if any, is reset). It does not wait for
// the accept loop; Drain does. Calling it again does nothing.
func (t *Tracker) DrainBacklog() {
	l := t.listener()
	switch {
	case l == nil:
	case l.backlog != nil:
		l.backlog.drain() // the accept loop closes the socket; Close does if none runs
	default: // no queue to take over
		_ = l.closeSocket()
	}
}

// Drain is a custom entrypoint's drain, in this order: connections going idle
// from now on are closed as soon as they are (after their answer); DrainBacklog;
// the idle connections are closed, oldest first, spread evenly over
// min(IdleCloseWindow, the time left on ctx) with entrypoint.Spread, each sent
// Config.Goodbye first; then Drain waits, without polling, for the accept loop to
// have taken the whole queue and for every busy connection (the ones handling a
// request, the new ones awaiting their first) to answer and be closed.
//
// It returns nil once all that is done, however close to ctx's deadline. When
// ctx is done first, it returns an error wrapping ctx.Err() that says how many
// connections are still busy, records that figure for Stats and Report, and
// leaves them to Close.
//
// A client whose request arrives on an idle connection in the instant the drain
// decided to close it gets the goodbye instead of an answer, and may retry; such
// input is counted (Stats.LateInput). A new connection that never sends anything
// stays busy until the entrypoint's own read deadline closes it: set one.
func (t *Tracker) Drain(ctx context.Context) error {
	t.draining.Store(true)
	t.count()
	t.DrainBacklog()
	idle := t.snapshot(stateIdle)
	spreadErr := entrypoint.Spread(ctx, t.cfg.IdleCloseWindow, idle, t.closeIdle)
	waitErr := ctx.Err()
	if l := t.listener(); waitErr == nil && l != nil && l.backlog != nil && t.accepting.Load() {
		waitErr = wait.Await(ctx, l.backlog.emptied)
	}
	if waitErr == nil {
		waitErr = t.busy.Wait(ctx)
	}
	if spreadErr == nil && waitErr == nil {
		return nil
	}
	n := t.Busy()
	t.busyAtDeadline.Store(int64(n))
	return fmt.Errorf("%s: drain: %d connections still busy: %w", t.cfg.Name, n, ctx.Err())
}

// closeIdle sends the goodbye to c and closes it, if it is still idle: one that
// turned busy is closed after its answer (Conn.Idle).
func (t *Tracker) closeIdle(c *Conn) {
	if c.claimIdle() {
		t.closedIdle.Add(1)
		c.goodbye()
	}
}

// Close cuts everything: it closes the listener's socket, even mid-DrainBacklog,
// and every connection followed, busy or not, without a goodbye. Detached
// connections are left to their owner. It may be called before Listener and more
// than once.
func (t *Tracker) Close() error {
	t.draining.Store(true)
	var err error
	if l := t.listener(); l != nil {
		err = l.closeSocket()
	}
	for _, c := range t.snapshot(-1) {
		c.Close()
	}
	return err
}

// CloseListener closes the listener's socket, even mid-DrainBacklog, and leaves
// the connections alone: for when the accept loop returned.
func (t *Tracker) CloseListener() error {
	if l := t.listener(); l != nil {
		return l.closeSocket()
	}
	return nil
}

func (t *Tracker) listener() *Listener {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ln
}

// snapshot returns the followed connections in state (-1: all), oldest first.
func (t *Tracker) snapshot(state int32) []*Conn {
	t.mu.Lock()
	list := make([]*Conn, 0, len(t.conns))
	for c := range t.conns {
		list = append(list, c)
	}
	t.mu.Unlock()
	if state >= 0 {
		list = slices.DeleteFunc(list, func(c *Conn) bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.state.Load() != state
		})
	}
	slices.SortFunc(list, func(a, b *Conn) int { return cmp.Compare(a.seq, b.seq) })
	return list
}

// follow wraps nc, just accepted, in a busy Conn whose reads end at readBy (zero:
// no such limit).
func (t *Tracker) follow(nc net.Conn, readBy time.Time) *Conn {
	c := &Conn{Conn: nc, t: t, readBy: readBy}
	c.state.Store(stateBusy)
	t.mu.Lock()
	t.seq++
	c.seq = t.seq
	t.conns[c] = struct{}{}
	t.mu.Unlock()
	// In the set before counting is read, so that count brings it in if this misses
	// the start of counting.
	c.mu.Lock()
	c.recount()
	c.mu.Unlock()
	return c
}

// forget stops following c.
func (t *Tracker) forget(c *Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}
