package kafkaentry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/segmentio/kafka-go"
)

// A partition paused on an outage resumes within Outage.Max of the dependency's
// return, however long the outage lasted: the backoff is capped, in virtual time.
// (TestOutageFake and TestOutagePostgres run the same story on a broker, with a
// sanity bound only.)
func TestOutageResumesWithinMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		var attempts atomic.Int32
		handled := make(chan time.Time, 1)
		h := func(context.Context, kafka.Message) error {
			attempts.Add(1)
			if down.Load() {
				return fmt.Errorf("store: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
			}
			handled <- time.Now()
			return nil
		}
		fg := newFakeGroup(false)
		c := fakeConsumer(t, Config{Outage: Outage{Initial: 100 * time.Millisecond, Max: time.Second}}, h, fg)
		stop, served := serve(c)
		fg.msgs <- msgAt(0)
		synctest.Wait()
		if ps := c.Paused(); len(ps) != 1 || ps[0].Cause != causeTransient {
			t.Fatalf("Paused = %+v, want t/0 paused as transient", ps)
		}
		time.Sleep(time.Minute) // the outage: the backoff has long reached Max
		if n := attempts.Load(); n < 30 {
			t.Errorf("%d attempts in a minute's outage, want one about every Max (1s)", n)
		}
		if st, ps := c.Stats(), c.Paused(); st.DeadLettered != 0 || st.Released != 0 || st.Handled != 0 || len(ps) != 1 {
			t.Errorf("stats %+v, paused %+v after a minute's outage, want the message still held, nothing given up", st, ps)
		}
		up := time.Now()
		down.Store(false)
		at := <-handled
		if took := at.Sub(up); took > time.Second {
			t.Errorf("resumed %v after the dependency came back, want within Outage.Max (1s)", took)
		}
		synctest.Wait()
		if ps := c.Paused(); len(ps) != 0 {
			t.Errorf("Paused = %+v after the message was handled, want none", ps)
		}
		close(stop)
		if err := errors.Join(<-served, c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
			t.Fatal(err)
		}
		if got := fg.committed(); got != 1 {
			t.Errorf("committed offset %d, want 1 once offset 0 was handled", got)
		}
	})
}
