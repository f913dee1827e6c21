package kafkaentry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/internal/wait"
)

// group is the part of *kafka.ConsumerGroup the consumer uses, so that tests can
// stand in a group of their own.
type group interface {
	// Next waits for the next generation. There is never more than one: kafka-go
	// makes the next one only after every function started in the previous one
	// returned.
	Next(ctx context.Context) (*generation, error)
	// Close ends the current generation, waits for the functions started in it,
	// and leaves the group.
	Close() error
}

// generation is one generation of the group, as kafka.Generation gives it.
type generation struct {
	id          int32
	member      string // this member's ID in the group
	assignments map[string][]kafka.PartitionAssignment
	// start runs fn in a goroutine whose ctx ends with the generation; the
	// generation ends when any such fn returns, and the next one begins only after
	// all of them returned.
	start func(fn func(ctx context.Context))
	// commit commits the offsets (the next offset to read, per topic and
	// partition) in this generation; the coordinator refuses it once the group
	// moved on to the next.
	commit func(offsets map[string]map[int]int64) error
}

// kafkaGroup adapts *kafka.ConsumerGroup.
type kafkaGroup struct{ cg *kafka.ConsumerGroup }

func (g kafkaGroup) Next(ctx context.Context) (*generation, error) {
	gen, err := g.cg.Next(ctx)
	if err != nil {
		return nil, err
	}
	return &generation{
		id: gen.ID, member: gen.MemberID, assignments: gen.Assignments, start: gen.Start, commit: gen.CommitOffsets,
	}, nil
}

func (g kafkaGroup) Close() error { return g.cg.Close() }

// assignment is one partition assigned in a generation and where it starts: a
// committed offset, or kafka.FirstOffset or kafka.LastOffset.
type assignment struct {
	topic     string
	partition int
	offset    int64
}

func (a assignment) String() string { return fmt.Sprintf("%s/%d", a.topic, a.partition) }

// partitions lists the generation's assignments in topic and partition order.
func (g *generation) partitions() []assignment {
	var out []assignment
	for topic, pas := range g.assignments {
		for _, pa := range pas {
			out = append(out, assignment{topic: topic, partition: pa.ID, offset: pa.Offset})
		}
	}
	slices.SortFunc(out, func(a, b assignment) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return out
}

// genState is what the consumer keeps about the generation in progress.
type genState struct {
	gen     *generation
	epoch   uint64             // the Consumer's epoch when it began
	end     context.CancelFunc // ends it early: a Serve after a failure
	offsets offsetTable
	// handling counts the partition goroutines still reading or handling; idle is
	// closed when it reaches zero.
	handling atomic.Int32
	idle     chan struct{}
}

func (g *genState) doneHandling() {
	if g.handling.Add(-1) == 0 {
		close(g.idle)
	}
}

// groupLoop takes each generation the group makes and starts runGeneration in it,
// until the group is closed or ctx is done.
func (c *Consumer) groupLoop(ctx context.Context) {
	for {
		gen, err := c.group.Next(ctx)
		switch {
		case err == nil:
		case errors.Is(err, kafka.ErrGroupClosed), ctx.Err() != nil:
			return
		case errors.Is(err, kafka.RebalanceInProgress):
			// kafka-go joins again at once; the coordinator paces it.
			c.log.Debug("kafka group: rebalance in progress; joining again", zap.Error(err))
			continue
		default:
			// kafka-go left the group and joins again after its JoinGroupBackoff.
			c.log.Warn("kafka group: joining failed; retrying", zap.Error(err))
			continue
		}
		// Counted before Start, while this goroutine is, so that Stop's wait on
		// c.tasks cannot miss it.
		exit := c.tasks.Track()
		gen.start(func(ctx context.Context) {
			defer exit()
			c.runGeneration(ctx, gen)
		})
	}
}

// runGeneration consumes the generation's partitions until ctx ends with the
// generation (a rebalance, or Close) or a Serve after a failure ends it early, and
// hands them back with their offsets: it stops every partition's intake, waits for the handlers in flight (within half the
// RebalanceTimeout; then cancels them and abandons them a second later), commits
// synchronously what the generation handled, and only then returns. kafka-go joins
// the next generation only after that, so the next owner of each partition starts
// right after the last message handled here.
func (c *Consumer) runGeneration(ctx context.Context, gen *generation) {
	parts := gen.partitions()
	gs := &genState{gen: gen, idle: make(chan struct{})}
	ctx, gs.end = context.WithCancel(ctx)
	defer gs.end()
	c.base.Lock()
	gs.epoch = c.epoch
	intake, stopIntake := context.WithCancel(c.intakeCtx) // a Serve after a failure makes a new one
	c.base.Unlock()
	defer stopIntake()
	handlers, cancelHandlers := context.WithCancel(c.runCtx)
	defer cancelHandlers()

	c.log.Info("partitions assigned", zap.Int32("generation", gen.id), zap.String("member", gen.member),
		zap.Stringers("partitions", parts))
	gs.handling.Store(int32(len(parts)))
	if len(parts) == 0 {
		close(gs.idle)
	}
	c.base.Lock()
	c.gen = gs
	c.base.Unlock()
	for _, a := range parts {
		c.tasks.Go(func() { c.consumePartition(partitionRun{assignment: a, gs: gs, intake: intake, handlers: handlers}) })
	}

	c.commitLoop(ctx, gs)

	began := time.Now()
	stopIntake()
	abandoned := c.awaitHandlers(gs, cancelHandlers)
	cctx, cancel := context.WithTimeout(context.Background(), backgroundCommitTimeout)
	n, err := c.commitGen(cctx, gs)
	cancel()
	left := gs.offsets.seal()
	c.base.Lock()
	if c.gen == gs {
		c.gen = nil
	}
	c.base.Unlock()

	fields := []zap.Field{
		zap.Int32("generation", gen.id), zap.Stringers("partitions", parts), zap.Uint64("committed", n),
		zap.Int("abandoned", abandoned), zap.Duration("took", time.Since(began)),
	}
	switch {
	case err != nil:
		c.log.Warn("partitions revoked; the final commit failed, their next owner delivers again what was handled here",
			append(fields, zap.Uint64("uncommitted", left), zap.Error(err))...)
	case abandoned > 0:
		c.log.Warn("partitions revoked with handlers still running; abandoned, their messages stay uncommitted", fields...)
	default:
		c.log.Info("partitions revoked", fields...)
	}
}

// awaitHandlers waits for the generation's partition goroutines to stop handling:
// half the RebalanceTimeout (none once Stop cancelled the handlers), then it
// cancels their ctx and waits hooks.AbandonAfter more. It returns how many were still
// handling, abandoned.
func (c *Consumer) awaitHandlers(gs *genState, cancelHandlers context.CancelFunc) int {
	grace := c.cfg.RebalanceTimeout / 2
	if c.runCtx.Err() != nil {
		grace = 0
	}
	if wait.For(gs.idle, grace) {
		return 0
	}
	c.log.Warn("partitions revoked while handlers are running; cancelling them",
		zap.Int32("generation", gs.gen.id), zap.Duration("waited", grace))
	cancelHandlers()
	if wait.For(gs.idle, wait.AbandonAfter) {
		return 0
	}
	return int(gs.handling.Load())
}
