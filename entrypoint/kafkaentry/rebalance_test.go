package kafkaentry_test

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
)

// TestRebalance runs two consumers of one group on a stream that keeps flowing: the
// first consumes throughout while the second is replaced five times by a new
// Consumer, each time after it took part of the partitions and handled messages.
// Every replacement makes two rebalances that take partitions away from the first
// consumer while it holds handled offsets it has not committed yet.
func TestRebalance(t *testing.T) {
	t.Run("graceful restarts handle every message exactly once", func(t *testing.T) {
		res := rebalanceRun(t, false)
		if res.duplicates != 0 {
			t.Errorf("%d messages handled more than once, want none", res.duplicates)
		}
	})

	t.Run("crashes lose nothing and deliver again only what was handled and not committed", func(t *testing.T) {
		res := rebalanceRun(t, true)
		t.Logf("%d messages delivered again after %d crashes; the crashed consumers had handled %d without committing them",
			res.duplicates, rebalanceRestarts, res.uncommitted)
		if res.duplicates > int(res.uncommitted) {
			t.Errorf("%d duplicate handlings, more than the %d handled-but-uncommitted messages of the crashed consumers",
				res.duplicates, res.uncommitted)
		}
	})
}

const rebalanceRestarts = 5

type rebalanceResult struct {
	duplicates  int    // handlings beyond the first, over every message
	uncommitted uint64 // Stats().Uncommitted of the replaced consumers, summed
}

// rebalanceRun produces to a 6-partition topic until the second consumer was
// replaced rebalanceRestarts times — by Drain and Stop, or by a crash — then lets
// the first consumer finish the stream, and checks that every message was handled
// (0 lost) and every offset committed.
func rebalanceRun(t *testing.T, crash bool) rebalanceResult {
	const partitions, batch = 6, 50
	topic, group := newTopic(t, partitions), newGroup(t)
	col := newCollector()
	newConsumer := func() *kafkaentry.Consumer {
		cfg := config(t, topic)
		cfg.GroupID = group
		cfg.HeartbeatInterval = 100 * time.Millisecond // rebalances reach the members fast
		cfg.Workers = 2
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	var produced atomic.Int64
	stopProducing, producing := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(producing)
		w := newProducer(t, topic)
		defer w.Close()
		for b := 0; ; b++ {
			select {
			case <-stopProducing:
				return
			case <-time.After(20 * time.Millisecond):
			}
			msgs := make([]kafka.Message, batch)
			for i := range msgs {
				v := []byte(fmt.Sprintf("b%05d-%02d", b, i))
				msgs[i] = kafka.Message{Key: v, Value: v}
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			err := w.WriteMessages(ctx, msgs...)
			cancel()
			if err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			produced.Add(batch)
		}
	}()
	defer func() {
		select {
		case <-stopProducing:
		default:
			close(stopProducing)
		}
		<-producing
	}()

	first := start(t, newConsumer())
	var res rebalanceResult
	for i := range rebalanceRestarts {
		c := newConsumer()
		r := start(t, c)
		before := c.Stats().Handled
		waitUntil(t, func() bool { return c.Stats().Handled >= before+150 },
			fmt.Sprintf("replacement %d handles messages", i+1))
		if crash {
			close(r.stop)
			if err := <-r.served; err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			err := c.Crash(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		} else {
			r.mustShutdown(t)
		}
		st := c.Stats()
		res.uncommitted += st.Uncommitted
		t.Logf("replacement %d: handled %d, committed %d, uncommitted %d; %d produced so far",
			i+1, st.Handled, st.Committed, st.Uncommitted, produced.Load())
		if !crash && st.Uncommitted != 0 {
			t.Errorf("replacement %d drained with %d handled messages uncommitted", i+1, st.Uncommitted)
		}
	}
	close(stopProducing)
	<-producing
	// One last message on each partition, after all the others: once the first
	// consumer handled it, it has also handled again what a crashed consumer left
	// uncommitted on that partition before it (waiting for every value alone would
	// not say so: the crashed consumer handled them once).
	for p := range partitions {
		produceToPartition(t, topic, p, fmt.Sprintf("tail-%d", p))
	}

	n := int(produced.Load()) + partitions
	distinct := func() int {
		col.mu.Lock()
		defer col.mu.Unlock()
		return len(col.byValue)
	}
	waitUntil(t, func() bool { return distinct() >= n }, fmt.Sprintf("all %d messages handled", n))
	first.mustShutdown(t)
	if st := first.c.Stats(); st.Uncommitted != 0 {
		t.Errorf("the first consumer drained with %d handled messages uncommitted", st.Uncommitted)
	}

	col.mu.Lock()
	for v, times := range col.byValue {
		if times > 1 {
			res.duplicates += times - 1
			if !crash && res.duplicates <= 10 {
				t.Errorf("%s handled %d times", v, times)
			}
		}
	}
	handled := len(col.byValue)
	col.mu.Unlock()
	if handled != n {
		t.Errorf("%d distinct messages handled, want the %d produced", handled, n)
	}
	t.Logf("%d messages produced, %d distinct handled, %d duplicate handlings", n, handled, res.duplicates)
	if got, want := committed(t, group, topic, partitions), endOffsets(t, topic, partitions); !maps.Equal(got, want) {
		t.Errorf("committed offsets %v, want the end offsets %v", got, want)
	}
	return res
}

// waitUntil polls cond until it holds; waitFor bounds it as a failure timeout.
func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", waitFor, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
