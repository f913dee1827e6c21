package kafkaentry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/segmentio/kafka-go"
)

// These tests run the consumer against a fake group and fake partition readers in
// a synctest bubble, so that timeouts, retry schedules and rebalances are checked
// exactly, in virtual time.

func TestHangingClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fg := newFakeGroup(true)
		c := fakeConsumer(t, Config{CloseTimeout: 3 * time.Second}, func(context.Context, kafka.Message) error { return nil }, fg)
		stop, served := serve(c)
		fg.msgs <- msgAt(0)
		fg.msgs <- msgAt(1)
		synctest.Wait()
		close(stop)
		if err := <-served; err != nil {
			t.Fatal(err)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		begin := time.Now()
		if err := c.Drain(ctx); err != nil {
			t.Fatalf("Drain = %v, want nil: an abandoned close is logged, not an error", err)
		}
		if took := time.Since(begin); took != 3*time.Second {
			t.Errorf("Drain took %v, want CloseTimeout (3s)", took)
		}
		if ds := c.Stats().Drain; !ds.CloseAbandoned {
			t.Errorf("drain stats %+v, want CloseAbandoned", ds)
		}
		if got := fg.committed(); got != 2 {
			t.Errorf("committed offset %d before closing, want 2 (both messages)", got)
		}

		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		defer scancel()
		begin = time.Now()
		if err := c.Stop(sctx); err != nil {
			t.Errorf("Stop = %v", err)
		}
		if took := time.Since(begin); took != time.Second {
			t.Errorf("Stop took %v, want its ctx's 1s", took)
		}
		close(fg.release) // let the abandoned Close finish, so the bubble empties
	})
}

func TestRetrySchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls []time.Time
		h := func(context.Context, kafka.Message) error {
			calls = append(calls, time.Now())
			if len(calls) < 4 {
				return errors.New("not yet")
			}
			return nil
		}
		fg := newFakeGroup(false)
		c := fakeConsumer(t, Config{Retry: Retry{Attempts: 4, Initial: 100 * time.Millisecond, Max: 250 * time.Millisecond}}, h, fg)
		stop, served := serve(c)
		fg.msgs <- msgAt(0)
		time.Sleep(time.Second) // virtual: every retry wait is over
		synctest.Wait()
		if len(calls) != 4 {
			t.Fatalf("%d calls, want 4", len(calls))
		}
		for i, w := range [][2]time.Duration{{50, 100}, {100, 200}, {125, 250}} {
			gap := calls[i+1].Sub(calls[i])
			if gap < w[0]*time.Millisecond || gap > w[1]*time.Millisecond {
				t.Errorf("wait %d was %v, want within [%vms, %vms]", i+1, gap, w[0], w[1])
			}
		}
		close(stop)
		<-served
		if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
			t.Fatal(err)
		}
		if got := fg.committed(); got != 1 {
			t.Errorf("committed offset %d, want 1 once offset 0 was handled", got)
		}
		if st := c.Stats(); st.Failed != 3 || st.Handled != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestCommitBatching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fg := newFakeGroup(false)
		c := fakeConsumer(t, Config{CommitBatch: 10, CommitInterval: time.Minute}, func(context.Context, kafka.Message) error { return nil }, fg)
		stop, served := serve(c)
		for i := range 5 {
			fg.msgs <- msgAt(int64(i))
		}
		synctest.Wait()
		if n := fg.commitCount(); n != 0 {
			t.Fatalf("%d commits after 5 messages, want none before the batch or the interval", n)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n, got := fg.commitCount(), fg.committed(); n != 1 || got != 5 {
			t.Fatalf("after the interval: %d commits of offset %d, want 1 of offset 5", n, got)
		}
		for i := 5; i < 15; i++ {
			fg.msgs <- msgAt(int64(i))
		}
		synctest.Wait()
		if n, got := fg.commitCount(), fg.committed(); n != 2 || got != 15 {
			t.Fatalf("after a batch of 10: %d commits of offset %d, want 2 of offset 15", n, got)
		}
		close(stop)
		<-served
		if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
			t.Fatal(err)
		}
		if n := fg.commitCount(); n != 2 {
			t.Errorf("%d commits, want no empty commit at the drain", n)
		}
	})
}

func TestDrainReleasesRetryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fg := newFakeGroup(false)
		fail := func(context.Context, kafka.Message) error { return errors.New("down") }
		c := fakeConsumer(t, Config{Retry: Retry{Attempts: 5, Initial: time.Hour}}, fail, fg)
		stop, served := serve(c)
		fg.msgs <- msgAt(0)
		synctest.Wait() // the message waits for its second attempt
		if c.InFlight() != 1 {
			t.Fatalf("in flight %d, want 1", c.InFlight())
		}
		close(stop)
		<-served
		begin := time.Now()
		if err := c.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(begin); took != 0 {
			t.Errorf("Drain took %v, want no wait for the retry schedule", took)
		}
		if ds := c.Stats().Drain; ds.Released != 1 || ds.Finished != 0 {
			t.Errorf("drain stats %+v, want the message released", ds)
		}
		if err := c.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := fg.committed(); got != -1 {
			t.Errorf("committed offset %d, want nothing", got)
		}
	})
}

func TestStopCancelsHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fg := newFakeGroup(false)
		dlq := &fakeWriter{}
		h := func(ctx context.Context, _ kafka.Message) error {
			<-ctx.Done()
			return ctx.Err()
		}
		c := fakeConsumer(t, Config{OnFailure: DeadLetter("t.dlq")}, h, fg, withDeadLetterWriter(dlq))
		stop, served := serve(c)
		fg.msgs <- msgAt(0)
		synctest.Wait()
		close(stop)
		<-served
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Drain = %v, want the deadline", err)
		}
		if err := c.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := c.Stats(); st.Failed != 0 || st.DeadLettered != 0 || st.Released != 1 || fg.committed() != -1 || dlq.count() != 0 {
			t.Errorf("stats %+v, committed %d, dead letters %d: a cancelled handler must not count as a failure",
				st, fg.committed(), dlq.count())
		}
	})
}

func TestDeadLetterWriteRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fg := newFakeGroup(false)
		dlq := &fakeWriter{failures: 2}
		fail := func(context.Context, kafka.Message) error { return ErrUndecodable }
		c := fakeConsumer(t, Config{OnFailure: DeadLetter("t.dlq")}, fail, fg, withDeadLetterWriter(dlq))
		stop, served := serve(c)
		fg.msgs <- msgAt(0)
		time.Sleep(time.Minute)
		synctest.Wait()
		if dlq.count() != 1 || dlq.attempts != 3 {
			t.Errorf("%d dead letters in %d writes, want 1 in 3", dlq.count(), dlq.attempts)
		}
		close(stop)
		<-served
		if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
			t.Fatal(err)
		}
		if got := fg.committed(); got != 1 {
			t.Errorf("committed offset %d, want 1 once offset 0 was dead-lettered", got)
		}
	})
}

func TestFailureAfterStopIsReportedByDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fg := newFakeGroup(false)
		fail := func(context.Context, kafka.Message) error { return ErrUndecodable }
		c := fakeConsumer(t, Config{}, fail, fg)
		stop, served := serve(c)
		close(stop)
		if err := <-served; err != nil {
			t.Fatal(err)
		}
		fg.msgs <- msgAt(0) // during the drain delay
		synctest.Wait()
		var he *HandlerError
		if err := c.Drain(context.Background()); !errors.As(err, &he) || !errors.Is(err, ErrUndecodable) {
			t.Fatalf("Drain = %v, want the HandlerError", err)
		}
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("Stop = %v, want nil: Drain reported the failure", err)
		}
	})
}
