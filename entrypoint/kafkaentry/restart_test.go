package kafkaentry_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
)

// A consumer whose Serve failed under StopEntrypoint — its handler's backend was
// down — consumes again when Serve is called again (the Host's restart of a
// NonEssential consumer): the failed message comes first, nothing handled before it
// is delivered again — on the failed partition or on the other, which the failure
// stopped too — and Drain and Stop then commit and leave as after a first Serve.
func TestConsumerServesAgainAfterAFailure(t *testing.T) {
	topic := newTopic(t, 2)
	produceToPartition(t, topic, 0, "ok-0", "bad", "ok-1")
	produceToPartition(t, topic, 1, "p1-0", "p1-1")
	var down atomic.Bool
	down.Store(true)
	col := newCollector()
	col.fn = func(m kafka.Message) error {
		if string(m.Value) == "bad" && down.Load() {
			return errors.New("store unreachable")
		}
		return nil
	}
	cfg := config(t, topic)
	cfg.Retry = kafkaentry.Retry{Attempts: 2, Initial: time.Millisecond}
	c, err := kafkaentry.New(cfg, col.handle)
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, c)
	serveErr := r.failed(t)
	var he *kafkaentry.HandlerError
	if !errors.As(serveErr, &he) || he.Offset != 1 {
		t.Fatalf("first Serve = %v, want a HandlerError for offset 1", serveErr)
	}

	down.Store(false) // the backend is back
	go func() { r.served <- c.Serve(context.Background(), r.stop) }()
	col.waitCount(t, 5)
	produceToPartition(t, topic, 0, "ok-2")
	produceToPartition(t, topic, 1, "p1-2")
	col.waitCount(t, 7)
	r.mustShutdown(t)

	var p0 []string
	for _, v := range col.handled() {
		if !strings.HasPrefix(v, "p1-") {
			p0 = append(p0, v)
		}
	}
	if !slices.Equal(p0, []string{"ok-0", "bad", "ok-1", "ok-2"}) {
		t.Errorf("partition 0 handled %v, want ok-0, then bad again and what follows it, each once", p0)
	}
	col.mu.Lock()
	for _, v := range []string{"p1-0", "p1-1", "p1-2"} {
		if n := col.byValue[v]; n != 1 {
			t.Errorf("%s handled %d times, want once", v, n)
		}
	}
	col.mu.Unlock()
	if got := committed(t, cfg.GroupID, topic, 2); got[0] != 4 || got[1] != 3 {
		t.Errorf("committed offsets %v, want 4 and 3 (everything)", got)
	}
	if st := c.Stats(); st.Handled != 7 || st.Failed != 2 || st.Uncommitted != 0 {
		t.Errorf("stats %+v, want 7 handled, the 2 failed attempts, nothing uncommitted", st)
	}
}

// Drained after its failure and before a second Serve, a consumer starts nothing:
// the drain commits what was handled and leaves, and Serve returns nil.
func TestConsumerDrainedAfterAFailureServesNoMore(t *testing.T) {
	topic := newTopic(t, 1)
	produceToPartition(t, topic, 0, "ok-0", "bad", "ok-1")
	col := newCollector()
	col.fn = func(m kafka.Message) error {
		if string(m.Value) == "bad" {
			return errors.New("store unreachable")
		}
		return nil
	}
	cfg := config(t, topic)
	cfg.Retry = kafkaentry.Retry{Attempts: 1}
	c, err := kafkaentry.New(cfg, col.handle)
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, c)
	select {
	case err := <-r.served:
		if err == nil {
			t.Fatal("first Serve = nil, want the handler's failure")
		}
	case <-time.After(waitFor):
		t.Fatal("Serve did not fail")
	}
	if err := c.Drain(context.Background()); err != nil {
		t.Errorf("Drain = %v, want nil", err)
	}
	if err := c.Serve(context.Background(), r.stop); err != nil {
		t.Errorf("Serve after Drain = %v, want nil", err)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Errorf("Stop = %v", err)
	}
	if got := col.handled(); !slices.Equal(got, []string{"ok-0"}) {
		t.Errorf("handled %v, want only ok-0", got)
	}
	if got := committed(t, cfg.GroupID, topic, 1)[0]; got != 1 {
		t.Errorf("committed offset %d, want 1 (before the failed message)", got)
	}
}
