package kafkaentry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/fault"
)

// sqlErr stands in for a driver error with a SQLSTATE, as pgconn.PgError is.
type sqlErr string

func (e sqlErr) Error() string    { return "sql error " + string(e) }
func (e sqlErr) SQLState() string { return string(e) }

func TestIsTransient(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain error", errors.New("bad order"), false},
		{"refused connection, wrapped", fmt.Errorf("store: %w", refused), true},
		{"reset errno", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), true},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"SQLSTATE 08006 connection failure", sqlErr("08006"), true},
		{"SQLSTATE 57P01 admin shutdown", fmt.Errorf("exec: %w", sqlErr("57P01")), true},
		{"SQLSTATE 22003 out of range", sqlErr("22003"), false},
		{"SQLSTATE 23505 unique violation", sqlErr("23505"), false},
		{"Poison wins over a transient cause", kafkaentry.Poison(refused), false},
		{"Transient marks any error", kafkaentry.Transient(errors.New("HTTP 503 from the pricing service")), true},
		{"undecodable", fmt.Errorf("%w: bad JSON", kafkaentry.ErrUndecodable), false},
		{"panic", &fault.PanicError{Value: "boom"}, false},
	} {
		if got := kafkaentry.IsTransient(tc.err); got != tc.want {
			t.Errorf("%s: IsTransient(%v) = %t, want %t", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestOutageRules(t *testing.T) {
	t.Run("a failing dependency check makes an unclassified failure an outage", func(t *testing.T) {
		topic, dlq := newTopic(t, 1), newTopic(t, 1)
		produceToPartition(t, topic, 0, "m-0")
		back := make(chan struct{})
		depUp := func() bool {
			select {
			case <-back:
				return true
			default:
				return false
			}
		}
		col := newCollector()
		col.fn = func(kafka.Message) error {
			if !depUp() {
				return errors.New("HTTP 500 from the pricing service")
			}
			return nil
		}
		cfg := config(t, topic)
		cfg.Retry = kafkaentry.Retry{Attempts: 2, Initial: 10 * time.Millisecond}
		cfg.OnFailure = kafkaentry.DeadLetter(dlq)
		cfg.Outage.Check = func(context.Context) error {
			if depUp() {
				return nil
			}
			return errors.New("pricing service down")
		}
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		waitUntil(t, func() bool { return len(c.Paused()) == 1 }, "the partition is paused")
		if p := c.Paused()[0]; p.Cause != "dependency_check" || p.Offset != 0 {
			t.Errorf("pause %+v, want on offset 0 by the dependency check", p)
		}
		close(back) // the dependency is back
		col.waitCount(t, 1)
		r.mustShutdown(t)
		if st := c.Stats(); st.DeadLettered != 0 || st.Handled != 1 {
			t.Errorf("stats %+v, want the message handled and none dead-lettered", st)
		}
	})

	t.Run("distinct messages failing in a row are an outage, and a success ends it", func(t *testing.T) {
		topic, dlq := newTopic(t, 3), newTopic(t, 1)
		for p := range 3 {
			produceToPartition(t, topic, p, fmt.Sprintf("p%d", p))
		}
		back := make(chan struct{})
		col := newCollector()
		col.fn = func(kafka.Message) error {
			select {
			case <-back:
				return nil
			default:
				return errors.New("HTTP 500 from the pricing service") // unclassified
			}
		}
		cfg := config(t, topic)
		cfg.Workers = 3
		cfg.Retry = kafkaentry.Retry{Attempts: 3, Initial: 500 * time.Millisecond}
		cfg.OnFailure = kafkaentry.DeadLetter(dlq)
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		waitUntil(t, func() bool { return len(c.Paused()) > 0 }, "a partition is paused")
		if p := c.Paused()[0]; p.Cause != "distinct_failures" {
			t.Errorf("paused by %q, want %q", p.Cause, "distinct_failures")
		}
		close(back)
		col.waitCount(t, 3)
		r.mustShutdown(t)
		if st := c.Stats(); st.DeadLettered != 0 {
			t.Errorf("%d dead-lettered, want none", st.DeadLettered)
		}
	})

	t.Run("a drain during a pause releases the message uncommitted within its budget", func(t *testing.T) {
		topic := newTopic(t, 1)
		produceToPartition(t, topic, 0, "ok", "stuck", "after")
		col := newCollector()
		col.fn = func(m kafka.Message) error {
			if string(m.Value) == "stuck" {
				return fmt.Errorf("store: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
			}
			return nil
		}
		cfg := config(t, topic)
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		waitUntil(t, func() bool { return len(c.Paused()) == 1 }, "the partition is paused")
		began := time.Now()
		serveErr, drainErr, stopErr := r.shutdown(t, 2*time.Second)
		if err := errors.Join(serveErr, drainErr, stopErr); err != nil {
			t.Fatal(err)
		}
		// The drain's own deadline is the 2s budget (drainErr is nil); this is a sanity
		// bound on the whole shutdown, 10× the budget, for a loaded machine. That the
		// drain releases a waiting message at once is TestDrainReleasesRetryWait's,
		// in virtual time.
		if took := time.Since(began); took > 20*time.Second {
			t.Errorf("shutdown took %v, want within the 2s drain budget", took)
		}
		if got := committed(t, cfg.GroupID, topic, 1)[0]; got != 1 {
			t.Errorf("committed offset %d, want 1 (the paused message stays uncommitted)", got)
		}
		if st := c.Stats(); st.Released != 1 || st.DeadLettered != 0 || len(c.Paused()) != 0 {
			t.Errorf("stats %+v paused %v, want the paused message released", st, c.Paused())
		}
	})
}
