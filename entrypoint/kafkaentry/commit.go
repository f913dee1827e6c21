package kafkaentry

import (
	"context"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
)

// backgroundCommitTimeout bounds one commit of the commit loop, so that a broker
// that stopped answering does not hold the loop (and the commits behind it) forever.
const backgroundCommitTimeout = 10 * time.Second

type topicPartition struct {
	topic     string
	partition int
}

// partitionOffsets tracks one partition: the highest offset handled and the highest
// offset known committed, and how many messages each covers.
type partitionOffsets struct {
	handled, committed   int64 // offsets of messages; committed is -1 before the first commit
	nHandled, nCommitted uint64
}

// commitEntry is one partition's share of a commit.
type commitEntry struct {
	tp     topicPartition
	offset int64  // the last handled message; kafka-go commits offset+1
	n      uint64 // nHandled when the entry was taken
}

// offsetTable holds, per partition, what the handlers finished and what was
// committed. Offsets only move forward: a message handled again after a rebalance
// never takes the commit back.
type offsetTable struct {
	mu          sync.Mutex
	parts       map[topicPartition]*partitionOffsets
	uncommitted uint64 // messages handled and not yet covered by a commit
}

// mark records msg as done (handled or dead-lettered) and returns how many messages
// are now waiting for a commit.
func (t *offsetTable) mark(msg *kafka.Message) uint64 {
	tp := topicPartition{msg.Topic, msg.Partition}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.parts[tp]
	if p == nil {
		if t.parts == nil {
			t.parts = make(map[topicPartition]*partitionOffsets)
		}
		p = &partitionOffsets{handled: -1, committed: -1}
		t.parts[tp] = p
	}
	p.handled = max(p.handled, msg.Offset)
	p.nHandled++
	t.uncommitted++
	return t.uncommitted
}

// pending returns an entry for every partition with handled messages not yet committed.
func (t *offsetTable) pending() []commitEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
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
	t.uncommitted -= covered
	return covered
}

// uncommittedCount returns how many handled messages no commit covers yet.
func (t *offsetTable) uncommittedCount() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.uncommitted
}

// commit synchronously commits the offsets of every message handled and not yet
// committed, and returns how many messages that covered. Commits are serialised: one
// waits for the one in progress, as long as ctx allows. A failed commit leaves the
// offsets pending for the next one.
func (c *Consumer) commit(ctx context.Context) (uint64, error) {
	select {
	case c.commitSem <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-c.commitSem }()

	entries := c.offsets.pending()
	if len(entries) == 0 {
		return 0, nil
	}
	msgs := make([]kafka.Message, len(entries))
	for i, e := range entries {
		msgs[i] = kafka.Message{Topic: e.tp.topic, Partition: e.tp.partition, Offset: e.offset}
	}
	if err := c.reader.CommitMessages(ctx, msgs...); err != nil {
		return 0, err
	}
	n := c.offsets.ack(entries)
	c.stats.committed.Add(n)
	for _, e := range entries {
		c.metrics.setCommitted(e.tp.topic, e.tp.partition, e.offset+1)
	}
	return n, nil
}

// commitLoop commits in the background every CommitInterval, and sooner when the
// workers kick it because CommitBatch messages are waiting, until quit is closed.
func (c *Consumer) commitLoop(ctx context.Context, quit <-chan struct{}) {
	t := time.NewTicker(c.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
		case <-c.kick:
		}
		cctx, cancel := context.WithTimeout(ctx, backgroundCommitTimeout)
		if _, err := c.commit(cctx); err != nil && ctx.Err() == nil {
			c.log.Warn("offset commit failed; the offsets stay pending for the next commit", zap.Error(err))
		}
		cancel()
	}
}

// marked records msg as done and kicks the commit loop when a batch is due.
func (c *Consumer) marked(msg *kafka.Message) {
	if c.offsets.mark(msg) >= uint64(c.cfg.CommitBatch) {
		select {
		case c.kick <- struct{}{}:
		default: // a kick is already pending
		}
	}
}
