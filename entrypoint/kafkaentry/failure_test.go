package kafkaentry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
)

func TestFailure(t *testing.T) {
	t.Run("a failing message is retried with backoff then dead-lettered and the partition moves on", func(t *testing.T) {
		topic, dlq := newTopic(t, 1), newTopic(t, 1)
		produceToPartition(t, topic, 0, "ok-0", "bad", "ok-1", "ok-2")
		var calls []time.Time
		col := newCollector()
		col.fn = func(m kafka.Message) error {
			if string(m.Value) == "bad" {
				calls = append(calls, time.Now())
				return errors.New("boom")
			}
			return nil
		}
		cfg := config(t, topic)
		cfg.Retry = kafkaentry.Retry{Attempts: 3, Initial: 20 * time.Millisecond, Max: 40 * time.Millisecond}
		cfg.OnFailure = kafkaentry.DeadLetter(dlq)
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		col.waitCount(t, 3)
		r.mustShutdown(t)

		if got := col.handled(); !slices.Equal(got, []string{"ok-0", "ok-1", "ok-2"}) {
			t.Errorf("handled %v", got)
		}
		if len(calls) != 3 {
			t.Fatalf("the failing message was tried %d times, want 3", len(calls))
		}
		for i, min := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond} {
			if gap := calls[i+1].Sub(calls[i]); gap < min {
				t.Errorf("wait before attempt %d was %v, want at least %v", i+2, gap, min)
			}
		}
		if got := committed(t, cfg.GroupID, topic, 1)[0]; got != 4 {
			t.Errorf("committed offset %d, want 4 (past the dead-lettered message)", got)
		}
		st := c.Stats()
		if st.Failed != 3 || st.DeadLettered != 1 || st.Handled != 3 {
			t.Errorf("stats %+v", st)
		}

		dead := readAll(t, dlq, 1)[0]
		info, ok := kafkaentry.ParseDeadLetter(dead)
		want := kafkaentry.DeadLetterInfo{Topic: topic, Partition: 0, Offset: 1, Group: cfg.GroupID, Attempts: 3,
			ErrorType: "error", Error: "boom", FailedAt: info.FailedAt}
		if !ok || info != want {
			t.Errorf("ParseDeadLetter = %+v, %v; want %+v, true", info, ok, want)
		}
		if info.FailedAt.Before(calls[2]) || info.FailedAt.Location() != time.UTC {
			t.Errorf("failed at %v, want after the last attempt (%v), in UTC", info.FailedAt, calls[2])
		}
		if string(dead.Value) != "bad" || string(dead.Key) != "bad" {
			t.Errorf("dead letter key/value %q/%q, want the original", dead.Key, dead.Value)
		}
	})

	t.Run("an undecodable message is dead-lettered at once", func(t *testing.T) {
		topic, dlq := newTopic(t, 1), newTopic(t, 1)
		produceToPartition(t, topic, 0, "garbage", "ok")
		calls := 0
		col := newCollector()
		col.fn = func(m kafka.Message) error {
			if string(m.Value) == "garbage" {
				calls++
				return fmt.Errorf("decode order: %w", kafkaentry.ErrUndecodable)
			}
			return nil
		}
		cfg := config(t, topic)
		cfg.OnFailure = kafkaentry.DeadLetter(dlq)
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		col.waitCount(t, 1)
		r.mustShutdown(t)
		if calls != 1 {
			t.Errorf("undecodable message tried %d times, want 1", calls)
		}
		if got := header(readAll(t, dlq, 1)[0], "x-error-type"); got != "undecodable" {
			t.Errorf("error type %q, want undecodable", got)
		}
		if got := committed(t, cfg.GroupID, topic, 1)[0]; got != 2 {
			t.Errorf("committed offset %d, want 2", got)
		}
	})

	t.Run("a panicking handler is treated as an error", func(t *testing.T) {
		topic, dlq := newTopic(t, 1), newTopic(t, 1)
		produceToPartition(t, topic, 0, "flaky", "always", "ok")
		flaky := 0
		col := newCollector()
		col.fn = func(m kafka.Message) error {
			switch string(m.Value) {
			case "flaky":
				if flaky++; flaky == 1 {
					panic("first time unlucky")
				}
			case "always":
				panic(fmt.Sprintf("cannot handle %s", m.Value))
			}
			return nil
		}
		cfg := config(t, topic)
		cfg.Retry = kafkaentry.Retry{Attempts: 2, Initial: time.Millisecond}
		cfg.OnFailure = kafkaentry.DeadLetter(dlq)
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		col.waitCount(t, 2)
		r.mustShutdown(t)
		if got := col.handled(); !slices.Equal(got, []string{"flaky", "ok"}) {
			t.Errorf("handled %v, want flaky (second attempt) and ok", got)
		}
		dead := readAll(t, dlq, 1)[0]
		if got := header(dead, "x-error-type"); got != "panic" {
			t.Errorf("error type %q, want panic", got)
		}
		if got := string(dead.Value); got != "always" {
			t.Errorf("dead-lettered %q, want always", got)
		}
		if st := c.Stats(); st.Failed != 3 {
			t.Errorf("%d failures counted, want 3", st.Failed)
		}
	})

	t.Run("StopEntrypoint fails Serve and leaves the offset uncommitted", func(t *testing.T) {
		topic := newTopic(t, 1)
		produceToPartition(t, topic, 0, "ok-0", "bad", "ok-1")
		col := newCollector()
		col.fn = func(m kafka.Message) error {
			if string(m.Value) == "bad" {
				return errors.New("boom")
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
		if !errors.As(serveErr, &he) || he.Offset != 1 || he.Attempts != 2 || he.Err.Error() != "boom" {
			t.Fatalf("Serve = %v, want a HandlerError for offset 1 after 2 attempts", serveErr)
		}
		// The Host drains and stops an entrypoint that failed.
		if err := c.Drain(context.Background()); err != nil {
			t.Errorf("Drain = %v, want nil (Serve reported the failure)", err)
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

		// After the restart the failed message comes again.
		again := newCollector()
		c2, err := kafkaentry.New(cfg, again.handle)
		if err != nil {
			t.Fatal(err)
		}
		r2 := start(t, c2)
		again.waitCount(t, 2)
		r2.mustShutdown(t)
		if got := again.handled(); !slices.Equal(got, []string{"bad", "ok-1"}) {
			t.Errorf("after restart handled %v, want bad, ok-1", got)
		}
	})
}
