package kafkaentry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/internal/wait"
	"github.com/servicewright/servicewright/kafkakit"
)

// Handler handles one message. It returns nil once the message's effects are done,
// and only then may its offset be committed. An error (or a panic) about the message
// makes the consumer retry it, and then apply Config.OnFailure; an error about the
// world (a dependency outage, see Outage) pauses the partition on the message until
// it succeeds. Return an error wrapping ErrUndecodable for a message that does not
// decode, or one marked with fault.Permanent for a message that retrying cannot fix,
// so that it goes to OnFailure at once (no retry, no outage pause); mark others with
// Poison or Transient when the default classification (IsTransient) would get them
// wrong.
//
// ctx is cancelled by Stop (not by Drain, which waits for the handler), and when a
// rebalance takes the message's partition away while the handler runs past half the
// RebalanceTimeout. A handler that fails because ctx was cancelled is neither
// retried nor dead-lettered, and its message stays uncommitted. The same message may
// be handled again after a crash, a drain that ran out of time, or a handler cut
// short that way: handlers must be idempotent.
type Handler func(ctx context.Context, msg kafka.Message) error

// HandlerError is the error of a message whose handling failed for good under
// OnFailure: StopEntrypoint. Its offset was not committed.
type HandlerError struct {
	Entrypoint string
	Topic      string
	Partition  int
	Offset     int64
	Attempts   int
	Err        error // the last attempt's error; a *fault.PanicError for a panic
}

func (e *HandlerError) Error() string {
	return fmt.Sprintf("kafkaentry %q: message %s/%d@%d failed after %d attempt(s): %v",
		e.Entrypoint, e.Topic, e.Partition, e.Offset, e.Attempts, e.Err)
}

// Unwrap returns the handler's error.
func (e *HandlerError) Unwrap() error { return e.Err }

var _ interface {
	entrypoint.Entrypoint
	entrypoint.InFlighter
} = (*Consumer)(nil)

// Consumer is a Kafka consumer-group entrypoint. Make one with New; the Host drives it
// through Bind, Serve, Drain and Stop.
type Consumer struct {
	cfg     Config
	handler Handler
	what    string // names the handler in a *fault.PanicError
	dialer  *kafka.Dialer
	readers readerConns // the partition readers' connections, which Stop cuts
	opts    options

	// Set by the telemetry the options gave, again by the Host's (defaults.go);
	// read-only once bound.
	log        *zap.Logger
	metrics    *metrics
	tracer     trace.Tracer // nil when the tracer provider is a no-op
	propagator propagation.TextMapPropagator
	reporter   fault.Reporter // nil: panics and dead-letters are only logged
	// spanNames holds, per consumed topic, the name of its handling spans;
	// read-only after New.
	spanNames map[string]string
	// openReader opens the reader of one assigned partition at offset; tests stand
	// in their own.
	openReader func(topic string, partition int, offset int64) (partitionReader, error)

	gate      entrypoint.Gate // admits messages to the handlers; Drain closes it
	slots     chan struct{}   // Config.Workers tokens: a handler runs holding one
	commitSem chan struct{}   // one commit at a time
	kick      chan struct{}   // tells the commit loop a batch is due
	stats     counters
	outage    outageState
	crashed   atomic.Bool // set by tests only (export_test.go): commit nothing more

	// Made by Bind. runCtx is the handlers' ctx, which Stop cancels; intakeCtx ends
	// every fetch and retry wait, and Drain, a failure and Stop cancel it.
	runCtx, intakeCtx     context.Context
	runCancel, stopIntake context.CancelFunc

	serving chan struct{} // closed by Serve: from then on partitions are read
	// Closed once, by the first of Drain and Stop.
	draining  chan struct{}
	drainOnce sync.Once
	// Closed once a message failed under StopEntrypoint; failErr says which. A Serve
	// after the failure makes a new one.
	failed chan struct{}

	// tasks counts every goroutine the consumer started and the functions it runs
	// in kafka-go's generations; Stop waits for them.
	tasks wait.Group

	base         entrypoint.Base // the phase, under its lock with the fields below
	group        group
	gen          *genState // the generation in progress; nil between generations
	dlq          messageWriter
	ownDLQ       *kafkakit.Producer // the dead-letter producer Bind made, closed by Drain or Stop
	failErr      error
	failReported bool          // failErr was returned by Serve, Drain or Stop
	epoch        uint64        // Serves that followed a failure; a generation's failure counts only in its own
	closeDone    chan struct{} // closed when the group's Close returned
	closeErr     error
	drainStats   DrainStats
}

// partitionReader reads one partition; *kafka.Reader without a GroupID is one.
type partitionReader interface {
	FetchMessage(ctx context.Context) (kafka.Message, error)
	Close() error
}

// New checks cfg and returns a consumer that calls handler for each message. It
// connects to nothing; Bind does. Every problem with cfg or opts is reported at once
// in a *fault.ConfigError (the Host's ConfigError) naming each field.
func New(cfg Config, handler Handler, opts ...Option) (*Consumer, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var l fault.Problems
	cfg = cfg.resolve(&l)
	if handler == nil {
		l.Addf("handler", "must not be nil")
	}
	if err := l.Err(); err != nil {
		return nil, err
	}

	dialer := &kafka.Dialer{DualStack: true, ClientID: "servicewright"}
	if o.dialer != nil {
		d := *o.dialer
		dialer = &d
	}
	dialer.Timeout = cfg.DialTimeout

	c := &Consumer{
		cfg:       cfg,
		handler:   handler,
		what:      fmt.Sprintf("kafkaentry %q handler", cfg.Name),
		dialer:    dialer,
		opts:      o,
		slots:     make(chan struct{}, cfg.Workers),
		commitSem: make(chan struct{}, 1),
		kick:      make(chan struct{}, 1),
		serving:   make(chan struct{}),
		draining:  make(chan struct{}),
		failed:    make(chan struct{}),
	}
	c.openReader = c.openPartition
	c.spanNames = spanNames(cfg.Topics)
	if err := c.base.Init(cfg.Name, o.tel, c.useTelemetry); err != nil {
		l.Addf("WithTelemetry", "%v", err)
		return nil, l.Err()
	}
	return c, nil
}

// joinLocked starts taking part in g, the group Bind joined: the generation loop
// runs from now on, but partitions are read only from Serve. The base's lock is held.
func (c *Consumer) joinLocked(ctx context.Context, g group) {
	c.group = g
	c.runCtx, c.runCancel = context.WithCancel(context.WithoutCancel(ctx))
	c.intakeCtx, c.stopIntake = context.WithCancel(c.runCtx)
	c.base.Bound()
	runCtx := c.runCtx
	c.tasks.Go(func() { c.groupLoop(runCtx) })
}

// Name returns Config.Name.
func (c *Consumer) Name() string { return c.base.Name() }

// Config returns the configuration with defaults applied.
func (c *Consumer) Config() Config {
	cfg := c.cfg
	cfg.Brokers, cfg.Topics = slices.Clone(cfg.Brokers), slices.Clone(cfg.Topics)
	return cfg
}

// Serve starts consuming: from now on each partition the group assigns to this
// member is read and handled by a goroutine the Consumer owns (see Config.Workers),
// and the handled offsets are committed in the background. Serve returns nil once
// stop is closed — with all of that still running: messages are handled and
// committed through the drain delay, until Drain.
//
// Serve returns a *HandlerError when a message fails for good under
// OnFailure: StopEntrypoint, before stop; fetching has stopped by then, and the
// Host's Drain commits what was handled. Serve may then be called again — the Host
// does so for a NonEssential registration, after its restart backoff, unless the
// handler's error was marked fault.Permanent — and consumes afresh: it ends the
// generation whose partitions stopped at the failure, having committed what was
// handled, so that the group assigns them again from their committed offsets, the
// failed message first. The membership and the dead-letter writer are kept, and
// nothing is counted twice. A fetch that fails (a broker gone) never fails Serve:
// the partition retries it with its own backoff.
//
// If ctx is done before stop, the Host has given up on the entrypoint: Serve
// cancels the handlers and returns ctx.Err() without waiting for them. Serve before Bind, or twice, returns an error wrapping
// entrypoint.ErrOutOfTurn, and Serve returns nil at once when Drain or Stop came
// first.
func (c *Consumer) Serve(ctx context.Context, stop <-chan struct{}) error {
	c.base.Lock()
	if start, err := c.base.Serve(); !start {
		c.base.Unlock()
		return err
	}
	again := c.failErr != nil
	if again {
		c.resumeLocked()
	} else {
		close(c.serving)
	}
	failed := c.failed
	c.base.Unlock()
	c.log.Info("consuming", zap.Strings("topics", c.cfg.Topics), zap.String("group", c.cfg.GroupID),
		zap.Int("workers", c.cfg.Workers), zap.Bool("again", again))

	select {
	case <-stop:
		return nil
	case <-c.draining:
		return nil
	case <-failed:
		err := c.takeFailure()
		c.base.Lock()
		c.base.Rearm() // failed on its own: Serve may start again, unless Drain or Stop came
		c.base.Unlock()
		return err
	case <-ctx.Done():
		c.runCancel()
		return ctx.Err()
	}
}

// Stop stops everything at once: it cancels the handlers' ctx and stops fetching,
// commits the offsets of messages already handled (unless Drain did and closed the
// group), closes the group — which ends the generation, commits what the cancelled
// handlers still finished, and leaves — closes the dead-letter writer, and waits for
// the goroutines to exit. Messages cut short stay uncommitted and are delivered again.
//
// Each wait is bounded by ctx, and the group's close also by CloseTimeout; a close
// that does not return in time is abandoned and logged. Stop returns ctx.Err() when
// handlers that ignore cancellation are still running at ctx's deadline; they are
// abandoned. It also returns a *HandlerError that neither Serve nor Drain returned.
// Without Bind it does nothing; a second Stop returns nil.
func (c *Consumer) Stop(ctx context.Context) error {
	c.base.Lock()
	if c.base.Stop() == entrypoint.Idle { // before Bind, or stopped already
		c.base.Unlock()
		return nil
	}
	c.beginDrainLocked()
	c.runCancel()
	groupClosing := c.closeDone != nil
	c.base.Unlock()
	c.gate.Close()

	var errs []error
	if !groupClosing {
		if _, err := c.commit(ctx); err != nil {
			errs = append(errs, fmt.Errorf("commit: %w", err))
		}
	}
	if _, err := c.closeGroup(ctx); err != nil {
		errs = append(errs, err)
	}
	// Everything handled is committed: a fetch in progress carries only messages
	// nobody took, so cut it rather than wait up to MaxWait for each reader's Close.
	c.readers.cutAll()
	if err := c.tasks.Wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("%d handler(s) still running, abandoned: %w", c.gate.InFlight(), err))
	}
	c.closeWriter(ctx)
	if err := c.takeFailure(); err != nil {
		errs = append(errs, err)
	}
	c.log.Info("stopped", zap.Uint64("uncommitted", c.Stats().Uncommitted))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafkaentry %q: stop: %w", c.cfg.Name, err)
	}
	return nil
}

// beginDrainLocked stops intake: no new fetch, no new retry wait. The base's lock is held.
func (c *Consumer) beginDrainLocked() {
	c.drainOnce.Do(func() { close(c.draining) })
	if c.stopIntake != nil {
		c.stopIntake()
	}
}

// resumeLocked undoes a failure for a new Serve: a new failure record and intake,
// and the generation in progress — whose partitions stopped at the failure — ended,
// so that the group hands them out again from their committed offsets (kafka-go joins
// the next generation once runGeneration returned, having committed what the ended
// one handled). The base's lock is held.
func (c *Consumer) resumeLocked() {
	c.failErr, c.failReported, c.failed = nil, false, make(chan struct{})
	c.epoch++
	c.intakeCtx, c.stopIntake = context.WithCancel(c.runCtx)
	if c.gen != nil {
		c.gen.end()
	}
}

// fail records the first failure under StopEntrypoint in gs's Serve and stops
// fetching. A failure of a generation an earlier Serve ran is ignored: that Serve
// returned its own.
func (c *Consumer) fail(gs *genState, err error) {
	c.base.Lock()
	defer c.base.Unlock()
	if c.failErr != nil || gs.epoch != c.epoch {
		return
	}
	c.failErr = err
	close(c.failed)
	c.stopIntake()
}

// takeFailure returns the failure once, to whichever of Serve, Drain and Stop
// reports it first.
func (c *Consumer) takeFailure() error {
	c.base.Lock()
	defer c.base.Unlock()
	if c.failErr == nil || c.failReported {
		return nil
	}
	c.failReported = true
	return c.failErr
}

// InFlight reports how many messages are being handled, retry waits and dead-letter
// writes included.
func (c *Consumer) InFlight() int { return c.gate.InFlight() }

// counters are the Consumer's running totals, read by Stats.
type counters struct {
	consumed, handled, failed, deadLettered, released, committed atomic.Uint64
	uncommitted                                                  atomic.Int64 // done, not covered by a commit
}

// Marks declares what the consumer needs of the fleet: a long-running process (it
// holds a group membership and partitions for the life of the process), so a
// run-to-completion profile refuses it. The Host reads them from the entrypoint; a
// registration may add marks, never take these away.
func (c *Consumer) Marks() fleet.Marks { return fleet.Marks{RequiresLongRunning: true} }
