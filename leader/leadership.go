package leader

import (
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/internal/wait"
	"github.com/servicewright/servicewright/lock"
	"go.opentelemetry.io/otel/trace"

	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
)

var _ interface {
	entrypoint.Entrypoint
	entrypoint.InFlighter
} = (*Leadership)(nil)

// Leadership is an entrypoint that keeps one replica of a fleet running lead at a
// time. Every replica campaigns for a renewing lease; the one that holds it runs lead
// until its term ends, then releases the lease and campaigns again. Make one with
// New.
//
// It declares its own fleet marks (see Marks): a serverless process cannot keep a
// lease.
type Leadership struct {
	conf       Config
	lead       func(context.Context, *Term) error
	log        *zap.Logger
	m          *metrics
	registered bool // m is registered with a registry
	tracer     trace.Tracer
	reporter   fault.Reporter // nil: panics of lead and Claim are only logged

	term atomic.Pointer[Term] // the current term, nil between terms

	base       entrypoint.Base    // the phase, under its lock with the fields below
	quit       chan struct{}      // closed by Drain and Stop: no new campaign, end the term
	cut        chan struct{}      // closed by Stop: cancel everything now
	cancelCamp context.CancelFunc // cancels the campaign calls (Drain)
	cancelBase context.CancelFunc // cancels everything (Stop)
	done       chan struct{}      // closed when the campaign loop has exited
	halted     error

	bg  wait.Group // bodies, renewals, bounded calls
	acq wait.Group // acquires, which are never cancelled
}

// New returns a Leadership for cfg that runs lead in each term it wins. It
// fills in cfg's defaults, checks cfg and the options, and returns a
// *fault.ConfigError listing every problem; it starts nothing.
//
// lead gets the term and a ctx that is cancelled YieldGrace after term.Ended is
// closed. It should work in units, check term.Live() between them, pass term.Token
// with every write, and return when Ended is closed. Returning nil ends the term
// ("released"); returning an error ends it too ("failed"), and the replica campaigns
// again after Config.Retry; a *fault.ConfigError, or an error marked with
// fault.Permanent, stops campaigning for good.
func New(cfg Config, lead func(ctx context.Context, term *Term) error, opts ...Option) (*Leadership, error) {
	o := newOptions(opts)
	var l fault.Problems
	cfg = cfg.resolve(&l)
	if lead == nil {
		l.Addf("lead", "must not be nil")
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	s := &Leadership{conf: cfg, lead: lead, quit: make(chan struct{}), cut: make(chan struct{})}
	if err := s.base.Init(cfg.Name, o.given, s.use); err != nil {
		l.Addf("WithTelemetry", "%v", err)
		return nil, l.Err()
	}
	return s, nil
}

// Name returns Config.Name ("leadership:" + Key by default).
func (l *Leadership) Name() string { return l.base.Name() }

// Config returns the configuration with its defaults applied.
func (l *Leadership) Config() Config { return l.conf }

// Marks declares what the Host's fleet profile checks: the campaign needs a process
// that keeps running (RequiresLongRunning), so the Serverless profile refuses a
// Leadership; every replica runs the campaign, so it needs no singleton guard.
func (l *Leadership) Marks() fleet.Marks { return fleet.Marks{RequiresLongRunning: true} }

// DrainTime is Config.DrainTime: the longest Drain takes. The Host checks it against the
// budget that Drain runs under.
func (l *Leadership) DrainTime() time.Duration { return l.conf.DrainTime() }

// Bind checks the lock backend once, without failing on it: a backend that does not
// answer within CampaignEvery is logged, and the campaign retries it. With
// RequiresFenceAdvance, a lock that answers that it cannot advance its counter
// (errors.ErrUnsupported) fails Bind with a *fault.ConfigError. Bind accepts nothing.
// A second Bind returns an error wrapping entrypoint.ErrOutOfTurn.
func (l *Leadership) Bind(ctx context.Context) error {
	l.base.Lock()
	defer l.base.Unlock()
	if err := l.base.Bind(); err != nil {
		return err
	}
	s := &l.conf
	var err error
	if s.RequiresFenceAdvance {
		// Advancing to 0 changes nothing, and shows whether the lock can.
		err = do(&l.bg, ctx, s.CampaignEvery, "advance fence", func(ctx context.Context) error {
			return s.Lock.AdvanceFence(ctx, s.Key, 0)
		})
		if isUnsupported(err) {
			return &fault.ConfigError{Problems: []fault.Problem{{Field: "RequiresFenceAdvance",
				Reason: fmt.Sprintf("the lock cannot advance its fencing counter: %v", err)}}}
		}
	} else {
		_, err = call(&l.bg, ctx, s.CampaignEvery, "inspect lease", func(ctx context.Context) (lock.Holder, error) {
			return s.Lock.Inspect(ctx, s.Key)
		})
	}
	if err != nil {
		l.log.Warn("leadership: lock backend did not answer at bind; the campaign keeps trying", zap.Error(err))
	}
	// 0 from the start, not absent: a replica that never led is scraped as not
	// leading, and "sum(held) == 0" finds a fleet without a leader.
	l.m.held.WithLabelValues(s.Key).Set(0)
	l.base.Bound()
	return nil
}

// Serve starts the campaign in a goroutine the Leadership owns and returns nil once
// stop is closed, still campaigning and, on the leader, still leading: the term goes
// on through the drain delay, and Drain ends it.
//
// If ctx is done before stop, the Host has given up on the entrypoint: Serve cuts
// everything as Stop does, waits for the campaign to exit at most hooks.AbandonAfter
// and returns ctx.Err() (joined with an error wrapping fault.ErrAbandoned when it did
// not exit in time). Serve never fails on its own: a lock backend that fails or
// does not answer is retried by the campaign every CampaignEvery, and a campaign
// stopped for good by a configuration error does not make Serve return (the process
// stays up; see Halted). There is thus nothing for the Host to restart.
// Serve before Bind, or twice, returns an error wrapping entrypoint.ErrOutOfTurn. It
// does not start the campaign, and returns nil, if Drain or Stop came first.
func (l *Leadership) Serve(ctx context.Context, stop <-chan struct{}) error {
	l.base.Lock()
	if start, err := l.base.Serve(); !start {
		l.base.Unlock()
		return err
	}
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	camp, cancelCamp := context.WithCancel(base)
	l.cancelBase, l.cancelCamp = cancelBase, cancelCamp
	l.done = make(chan struct{})
	done := l.done
	go l.run(base, camp, done)
	l.base.Unlock()

	return wait.ServeUntil(ctx, fmt.Sprintf("leadership %q", l.conf.Name), stop, l.quit, func() <-chan struct{} { return l.halt(true) })
}

// Drain stops campaigning and ends the term, if this replica holds one: it closes
// term.Ended, waits up to YieldGrace for lead to return, then cancels lead's ctx and
// waits up to ReleaseTimeout more, then releases the lease (within ReleaseTimeout),
// so the next replica leads within one CampaignEvery. A lead that ignores its
// cancellation keeps the lease, unrenewed, until its TTL lapses. An acquire in
// flight is abandoned; if it lands, it is released. Drain returns nil once the
// campaign has exited; if ctx is done first it returns ctx.Err() and leaves the rest
// to Stop. The whole takes at most Config.DrainTime. Without a prior Serve it returns nil.
func (l *Leadership) Drain(ctx context.Context) error {
	return wait.Await(ctx, l.halt(false))
}

// Stop cuts everything: it cancels lead's ctx at once (no grace), still releases the
// lease if lead returns within ReleaseTimeout, and waits for every goroutine the
// Leadership started. It returns nil when all have exited, or ctx.Err() when ctx is
// done first; whatever still runs is then abandoned (a lead that ignores its ctx
// keeps the lease until its TTL lapses).
func (l *Leadership) Stop(ctx context.Context) error {
	if err := wait.Await(ctx, l.halt(true)); err != nil {
		return err
	}
	if err := l.acq.Wait(ctx); err != nil {
		return err
	}
	return l.bg.Wait(ctx)
}

// halt moves the phase (to stopped when cut is set, to draining otherwise); the
// first Drain or Stop after Bind closes quit, and the first Stop closes cut. It
// returns the loop's done channel (nil when the loop never started).
func (l *Leadership) halt(cut bool) <-chan struct{} {
	l.base.Lock()
	defer l.base.Unlock()
	var turn entrypoint.Turn
	if cut {
		turn = l.base.Stop()
	} else {
		turn = l.base.Drain()
	}
	if turn == entrypoint.Idle { // before Bind, or after the same call
		return l.done
	}
	if !closed(l.quit) { // a Stop after Drain finds it closed
		close(l.quit)
		if l.cancelCamp != nil {
			l.cancelCamp()
		}
	}
	if cut {
		close(l.cut)
		if l.cancelBase != nil {
			l.cancelBase()
		}
	}
	if l.done == nil {
		return nil
	}
	return l.done
}

// Leadership reports the lease this replica campaigns for, keyed by Config.Key: Held
// while it leads a live term, with that term's fencing token (0 when not held). The
// Host shows it in /debug/lifecycle.
func (l *Leadership) Leadership() map[string]lock.Status {
	var st lock.Status
	if t := l.term.Load(); t != nil && t.Live() {
		st = lock.Status{Held: true, Token: t.Token}
	}
	return map[string]lock.Status{l.conf.Key: st}
}

// InFlight reports 1 while this replica leads and 0 otherwise.
func (l *Leadership) InFlight() int {
	if t := l.term.Load(); t != nil && t.Live() {
		return 1
	}
	return 0
}

// Halted returns the error that stopped campaigning for good (a configuration error,
// an exhausted counter, a fence floor the lock cannot pass), or nil. A readiness
// check may report it; the process is otherwise left running.
func (l *Leadership) Halted() error {
	l.base.Lock()
	defer l.base.Unlock()
	return l.halted
}

func (l *Leadership) fail(err error) {
	l.base.Lock()
	l.halted = err
	l.base.Unlock()
	l.m.held.WithLabelValues(l.conf.Key).Set(0)
	// zap has no critical level; Error with severity=critical is the loudest that
	// does not end the process (DPanic would, in development).
	l.log.Error("leadership: campaigning stopped for good; this replica will not lead until restarted with a fixed configuration",
		zap.Error(err), zap.String("severity", "critical"))
}
