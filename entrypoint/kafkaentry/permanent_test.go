package kafkaentry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/fault"
)

// fault.Permanent means "retrying cannot fix it" to the consumer as to every other
// component: the message goes to OnFailure on its first failure — no retry, no
// outage pause even while the dependency check fails and the cause looks transient —
// and the dead letter says "permanent", not "undecodable".
func TestFaultPermanentIsDeadLetteredAtOnce(t *testing.T) {
	refused := fmt.Errorf("store: %w", syscall.ECONNREFUSED)
	if kafkaentry.IsTransient(fault.Permanent(refused)) {
		t.Error("IsTransient(fault.Permanent(refused)) = true, want false")
	}

	t.Run("dead-lettered on the first failure, labelled permanent", func(t *testing.T) {
		topic, dlq := newTopic(t, 1), newTopic(t, 1)
		produceToPartition(t, topic, 0, "bad", "ok")
		calls := 0
		col := newCollector()
		col.fn = func(m kafka.Message) error {
			if string(m.Value) == "bad" {
				calls++
				return fmt.Errorf("order bad: %w", fault.Permanent(refused))
			}
			return nil
		}
		cfg := config(t, topic)
		cfg.Retry = kafkaentry.Retry{Attempts: 4, Initial: time.Millisecond}
		cfg.OnFailure = kafkaentry.DeadLetter(dlq)
		// The dependency is down for good: an unmarked failure would pause the
		// partition on the message forever.
		cfg.Outage = kafkaentry.Outage{Check: func(context.Context) error { return errors.New("store down") }}
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		col.waitCount(t, 1)
		r.mustShutdown(t)
		if calls != 1 {
			t.Errorf("permanent failure tried %d times, want 1", calls)
		}
		if ps := c.Paused(); len(ps) != 0 {
			t.Errorf("paused on %v, want no pause", ps)
		}
		dead := readAll(t, dlq, 1)[0]
		for key, want := range map[string]string{"x-error-type": "permanent", "x-attempts": "1"} {
			if got := header(dead, key); got != want {
				t.Errorf("dead letter header %s = %q, want %q", key, got, want)
			}
		}
		if st := c.Stats(); st.Failed != 1 || st.DeadLettered != 1 {
			t.Errorf("stats %+v, want 1 failure and 1 dead letter", st)
		}
		if got := committed(t, cfg.GroupID, topic, 1)[0]; got != 2 {
			t.Errorf("committed offset %d, want 2", got)
		}
	})

	t.Run("under StopEntrypoint it fails Serve after one attempt", func(t *testing.T) {
		topic := newTopic(t, 1)
		produceToPartition(t, topic, 0, "bad")
		cfg := config(t, topic)
		cfg.Retry = kafkaentry.Retry{Attempts: 4, Initial: time.Millisecond}
		c, err := kafkaentry.New(cfg, func(context.Context, kafka.Message) error {
			return fault.Permanent(errors.New("order breaks a rule"))
		})
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		serveErr := r.failed(t)
		var he *kafkaentry.HandlerError
		if !errors.As(serveErr, &he) || he.Attempts != 1 || !fault.IsPermanent(serveErr) {
			t.Fatalf("Serve = %v, want a permanent HandlerError after 1 attempt", serveErr)
		}
		if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
			t.Errorf("Drain, Stop = %v", err)
		}
	})

	t.Run("Poison keeps the retries", func(t *testing.T) {
		topic, dlq := newTopic(t, 1), newTopic(t, 1)
		produceToPartition(t, topic, 0, "bad", "ok")
		var calls int
		col := newCollector()
		col.fn = func(m kafka.Message) error {
			if string(m.Value) == "bad" {
				calls++
				return kafkaentry.Poison(refused)
			}
			return nil
		}
		cfg := config(t, topic)
		cfg.Retry = kafkaentry.Retry{Attempts: 3, Initial: time.Millisecond}
		cfg.OnFailure = kafkaentry.DeadLetter(dlq)
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		col.waitCount(t, 1)
		r.mustShutdown(t)
		dead := readAll(t, dlq, 1)[0]
		if calls != 3 || header(dead, "x-error-type") == "permanent" || !slices.Equal(col.handled(), []string{"ok"}) {
			t.Errorf("Poison: %d calls, error type %q; want 3 calls, not labelled permanent",
				calls, header(dead, "x-error-type"))
		}
	})
}
