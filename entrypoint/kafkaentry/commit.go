package kafkaentry

import (
	"context"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/internal/safe"
)

// backgroundCommitTimeout bounds one commit of the commit loop and the final commit
// of a generation, so that a broker that stopped answering does not hold them
// forever. kafka-go bounds each request itself too (5s).
const backgroundCommitTimeout = 10 * time.Second

type topicPartition struct {
	topic     string
	partition int
}

// partitionOffsets tracks one partition in one generation: the highest offset
// handled and the highest offset committed, and how many messages each covers.
type partitionOffsets struct {
	handled, committed   int64 // offsets of messages; committed is -1 before the first commit
	nHandled, nCommitted uint64
}

// commitEntry is one partition's share of a commit.
type commitEntry struct {
	tp     topicPartition
	offset int64  // the last handled message; offset+1 is committed
	n      uint64 // nHandled when the entry was taken
}

// offsetTable holds, per partition, what the handlers finished in one generation
// and what was committed. It is sealed when the generation's final commit is done:
// nothing handled later can be committed any more, because the partitions have
// another owner by then.
type offsetTable struct {
	mu      sync.Mutex
	parts   map[topicPartition]*partitionOffsets
	waiting uint64 // messages handled and not yet covered by a commit
	sealed  bool
}

// mark records msg as done (handled or dead-lettered) and returns how many messages
// now wait for a commit; ok is false when the table is sealed. part is the entry of
// msg's partition when the caller holds it (entry), nil to look it up.
func (t *offsetTable) mark(part *partitionOffsets, msg *kafka.Message) (waiting uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sealed {
		return 0, false
	}
	if part == nil {
		part = t.entryLocked(topicPartition{msg.Topic, msg.Partition})
	}
	part.handled = max(part.handled, msg.Offset)
	part.nHandled++
	t.waiting++
	return t.waiting, true
}

// entry returns tp's entry, made if need be. A partition run takes its own once,
// so that marking each of its messages needs no lookup.
func (t *offsetTable) entry(tp topicPartition) *partitionOffsets {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.entryLocked(tp)
}

func (t *offsetTable) entryLocked(tp topicPartition) *partitionOffsets {
	p := t.parts[tp]
	if p == nil {
		if t.parts == nil {
			t.parts = make(map[topicPartition]*partitionOffsets)
		}
		p = &partitionOffsets{handled: -1, committed: -1}
		t.parts[tp] = p
	}
	return p
}

// pending returns an entry for every partition with handled messages not yet
// committed; none once sealed.
func (t *offsetTable) pending() []commitEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sealed {
		return nil
	}
	var out []commitEntry
	for tp, p := range t.parts {
		if p.nHandled > p.nCommitted {
			out = append(out, commitEntry{tp: tp, offset: p.handled, n: p.nHandled})
		}
	}
	return out
}

// ack records entries as committed and returns how many messages that covered.
func (t *offsetTable) ack(entries []commitEntry) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var covered uint64
	for _, e := range entries {
		p := t.parts[e.tp]
		p.committed = max(p.committed, e.offset)
		if e.n > p.nCommitted {
			covered += e.n - p.nCommitted
			p.nCommitted = e.n
		}
	}
	t.waiting -= covered
	return covered
}

// seal ends the table and returns how many handled messages no commit covered.
func (t *offsetTable) seal() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sealed = true
	return t.waiting
}

// commit synchronously commits, in the current generation, the offsets of every
// message handled and not yet committed, and returns how many messages that
// covered. Between generations there is nothing to commit: the last one committed
// before it ended.
func (c *Consumer) commit(ctx context.Context) (uint64, error) {
	c.base.Lock()
	gs := c.gen
	c.base.Unlock()
	if gs == nil {
		return 0, nil
	}
	return c.commitGen(ctx, gs)
}

// commitGen synchronously commits gs's handled offsets in its generation. Commits
// are serialised: one waits for the one in progress, as long as ctx allows. A failed
// commit leaves the offsets pending for the next one. A commit still running when
// ctx is done is abandoned (kafka-go bounds it) and reported as failed.
func (c *Consumer) commitGen(ctx context.Context, gs *genState) (uint64, error) {
	select {
	case c.commitSem <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-c.commitSem }()
	if c.crashed.Load() {
		return 0, nil
	}

	entries := gs.offsets.pending()
	if len(entries) == 0 {
		return 0, nil
	}
	offsets := make(map[string]map[int]int64, 1)
	for _, e := range entries {
		if offsets[e.tp.topic] == nil {
			offsets[e.tp.topic] = make(map[int]int64)
		}
		offsets[e.tp.topic][e.tp.partition] = e.offset + 1
	}
	err := safe.Bounded(ctx, "kafka offset commit", 0, func(context.Context) error { return gs.gen.commit(offsets) })
	if err != nil {
		return 0, err
	}
	n := gs.offsets.ack(entries)
	c.stats.committed.Add(n)
	c.stats.uncommitted.Add(-int64(n))
	for _, e := range entries {
		c.metrics.setCommitted(e.tp.topic, e.tp.partition, e.offset+1)
	}
	return n, nil
}

// commitLoop commits gs's offsets in the background every CommitInterval, and
// sooner when the handlers kick it because CommitBatch messages are waiting, until
// the generation ends (ctx).
func (c *Consumer) commitLoop(ctx context.Context, gs *genState) {
	t := time.NewTicker(c.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
		}
		cctx, cancel := context.WithTimeout(context.Background(), backgroundCommitTimeout)
		if _, err := c.commitGen(cctx, gs); err != nil && ctx.Err() == nil {
			c.log.Warn("offset commit failed; the offsets stay pending for the next commit", zap.Error(err))
		}
		cancel()
	}
}

// marked records msg as done in p's generation and kicks the commit loop when a batch is due.
// A message done after its generation's final commit counts as uncommitted for
// good: the partition's next owner delivers it again.
func (c *Consumer) marked(p partitionRun, msg *kafka.Message) {
	c.stats.uncommitted.Add(1)
	if waiting, ok := p.gs.offsets.mark(p.offsets, msg); ok && waiting >= uint64(c.cfg.CommitBatch) {
		select {
		case c.kick <- struct{}{}:
		default: // a kick is already pending
		}
	}
}
