package kafkaentry_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
)

func TestConsume(t *testing.T) {
	t.Run("handled messages are committed", func(t *testing.T) {
		topic := newTopic(t, 3)
		produce(t, topic, values("m", 300)...)
		col := newCollector()
		cfg := config(t, topic)
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		col.waitCount(t, 300)
		r.mustShutdown(t)

		if got, want := committed(t, cfg.GroupID, topic, 3), endOffsets(t, topic, 3); !maps.Equal(got, want) {
			t.Errorf("committed offsets %v, want the end offsets %v", got, want)
		}
		st := c.Stats()
		if st.Consumed < 300 || st.Handled != 300 || st.Committed != 300 || st.Uncommitted != 0 {
			t.Errorf("stats %+v, want 300 handled and committed", st)
		}
		if !st.Drain.Ran || st.Drain.CloseAbandoned {
			t.Errorf("drain stats %+v", st.Drain)
		}
	})

	t.Run("Serve returns at stop and messages are still handled until Drain", func(t *testing.T) {
		topic := newTopic(t, 1)
		col := newCollector()
		c, err := kafkaentry.New(config(t, topic), col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		close(r.stop)
		if err := <-r.served; err != nil {
			t.Fatalf("Serve = %v, want nil at stop", err)
		}
		produce(t, topic, "after-stop") // the drain delay: still consuming
		col.waitCount(t, 1)
		if err := c.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := c.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := c.Stats().Drain.Committed; got != 1 {
			t.Errorf("the drain committed %d messages, want 1", got)
		}
	})

	t.Run("workers keep each partition's order", func(t *testing.T) {
		const partitions, n = 8, 2000
		topic := newTopic(t, partitions)
		produce(t, topic, values("o", n)...)
		col := newCollector()
		cfg := config(t, topic)
		cfg.Workers = 4
		var running, peak atomicMax
		col.fn = func(kafka.Message) error {
			peak.observe(running.add(1))
			defer running.add(-1)
			return nil
		}
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		col.waitCount(t, n)
		r.mustShutdown(t)

		col.mu.Lock()
		defer col.mu.Unlock()
		total := 0
		for p, offsets := range col.order {
			total += len(offsets)
			if !slices.IsSorted(offsets) {
				t.Errorf("partition %d handled out of order: %v", p, offsets)
			}
			for i := 1; i < len(offsets); i++ {
				if offsets[i] != offsets[i-1]+1 {
					t.Errorf("partition %d: offset %d after %d", p, offsets[i], offsets[i-1])
					break
				}
			}
		}
		if total != n {
			t.Errorf("handled %d messages, want %d", total, n)
		}
		t.Logf("at most %d handlers ran at once", peak.load())
	})
}

// TestGracefulRestarts runs a stream through consumers of one group that replace each
// other mid-stream, each drained gracefully while a handler is still running, and
// checks that every message was handled exactly once.
func TestGracefulRestarts(t *testing.T) {
	const partitions, n, generations = 6, 3000, 4
	topic := newTopic(t, partitions)
	group := newGroup(t)
	col := newCollector()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := range 10 {
			produce(t, topic, values(fmt.Sprintf("g%d", i), n/10)...)
		}
	}()

	for gen := 1; gen <= generations; gen++ {
		want := gen * n / generations
		// One handler call after the threshold blocks until Drain has begun, so
		// that every drain finds a message in flight.
		var blockOnce sync.Once
		blocked, release := make(chan struct{}), make(chan struct{})
		col.fn = func(kafka.Message) error {
			if gen < generations && col.count() >= want {
				blockOnce.Do(func() {
					close(blocked)
					<-release
				})
			}
			return nil
		}
		cfg := config(t, topic)
		cfg.GroupID = group
		cfg.Workers = 3
		cfg.CommitBatch = 50
		c, err := kafkaentry.New(cfg, col.handle, kafkaentry.WithTelemetry(entrypoint.Telemetry{Logger: onLog("draining", func() { close(release) })}))
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		col.waitCount(t, want)
		if gen < generations {
			select {
			case <-blocked:
			case <-time.After(waitFor):
				t.Fatal("no handler blocked")
			}
		}
		r.mustShutdown(t)
		st := c.Stats()
		t.Logf("generation %d: handled %d, drain %+v", gen, st.Handled, st.Drain)
		if st.Uncommitted != 0 {
			t.Errorf("generation %d left %d handled messages uncommitted", gen, st.Uncommitted)
		}
		if gen < generations && st.Drain.Finished < 1 {
			t.Errorf("generation %d: the drain finished %d messages, want the blocked one at least", gen, st.Drain.Finished)
		}
	}
	<-produced

	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.byValue) != n {
		t.Errorf("%d distinct messages handled, want %d (lost %d)", len(col.byValue), n, n-len(col.byValue))
	}
	for v, times := range col.byValue {
		if times != 1 {
			t.Errorf("%s handled %d times, want once", v, times)
		}
	}
	if got, want := committed(t, group, topic, partitions), endOffsets(t, topic, partitions); !maps.Equal(got, want) {
		t.Errorf("committed offsets %v, want the end offsets %v", got, want)
	}
}

func TestDrainPastGrace(t *testing.T) {
	topic := newTopic(t, 1)
	produceToPartition(t, topic, 0, "a", "b", "slow", "c")
	started := make(chan struct{})
	col := newCollector()
	release := make(chan struct{})
	defer close(release)
	cfg := config(t, topic)
	handler := func(ctx context.Context, m kafka.Message) error {
		if string(m.Value) == "slow" {
			close(started)
			select {
			case <-ctx.Done(): // Stop cancels it
				return ctx.Err()
			case <-release:
				return errors.New("test over")
			}
		}
		return col.handle(ctx, m)
	}
	c, err := kafkaentry.New(cfg, handler)
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, c)
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("the slow message never reached the handler")
	}
	serveErr, drainErr, stopErr := r.shutdown(t, 100*time.Millisecond)
	if serveErr != nil || stopErr != nil {
		t.Fatalf("Serve = %v, Stop = %v", serveErr, stopErr)
	}
	if !errors.Is(drainErr, context.DeadlineExceeded) {
		t.Fatalf("Drain = %v, want the deadline's error", drainErr)
	}
	if ds := c.Stats().Drain; ds.InFlight != 1 || ds.Abandoned != 1 || ds.Finished != 0 {
		t.Errorf("drain stats %+v, want 1 in flight and abandoned", ds)
	}
	if got := committed(t, cfg.GroupID, topic, 1)[0]; got != 2 {
		t.Errorf("committed offset %d, want 2 (a and b, Stop committed them)", got)
	}

	again := newCollector()
	c2, err := kafkaentry.New(cfg, again.handle)
	if err != nil {
		t.Fatal(err)
	}
	r2 := start(t, c2)
	again.waitCount(t, 2)
	r2.mustShutdown(t)
	if got := again.handled(); !slices.Equal(got, []string{"slow", "c"}) {
		t.Errorf("after restart handled %v, want slow, c", got)
	}
}

// atomicMax tracks a running count and its peak.
type atomicMax struct{ v atomic.Int64 }

func (a *atomicMax) add(d int64) int64 { return a.v.Add(d) }
func (a *atomicMax) load() int64       { return a.v.Load() }

func (a *atomicMax) observe(x int64) {
	for {
		cur := a.v.Load()
		if x <= cur || a.v.CompareAndSwap(cur, x) {
			return
		}
	}
}
