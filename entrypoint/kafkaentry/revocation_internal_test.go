package kafkaentry

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestRevocation ends generations under a consumer the way a rebalance does, and
// checks that each one hands its partition over only once what it handled is
// committed.
func TestRevocation(t *testing.T) {
	t.Run("the handler in flight finishes and is committed before the partition moves", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fg := newFakeGroup(false)
			release := make(chan struct{})
			h := func(_ context.Context, m kafka.Message) error {
				if m.Offset == 2 {
					<-release
				}
				return nil
			}
			c := fakeConsumer(t, Config{CommitInterval: time.Hour}, h, fg)
			stop, served := serve(c)
			for i := range 3 {
				fg.msgs <- msgAt(int64(i))
			}
			synctest.Wait() // offset 2 is in its handler

			rebalanced := make(chan time.Duration, 1)
			go func() {
				begin := time.Now()
				fg.rebalance()
				rebalanced <- time.Since(begin)
			}()
			time.Sleep(2 * time.Second)
			synctest.Wait()
			select {
			case <-rebalanced:
				t.Fatal("the generation ended with a handler in flight")
			default:
			}
			if n := fg.commitCount(); n != 0 {
				t.Fatalf("%d commits before the handler in flight finished", n)
			}
			close(release)
			if took := <-rebalanced; took != 2*time.Second {
				t.Errorf("the rebalance took %v, want the handler's 2s", took)
			}
			if got := fg.committed(); got != 3 {
				t.Errorf("committed offset %d at the revocation, want 3", got)
			}

			fg.msgs <- msgAt(3) // the next generation reads on from the committed offset
			synctest.Wait()
			if got := fg.openedAt(); !slices.Equal(got, []int64{kafka.FirstOffset, 3}) {
				t.Errorf("the partition's readers opened at %v, want first, then 3", got)
			}
			close(stop)
			<-served
			if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
				t.Fatal(err)
			}
			if st := c.Stats(); st.Handled != 4 || st.Committed != 4 || st.Uncommitted != 0 || fg.committed() != 4 {
				t.Errorf("stats %+v, committed offset %d, want 4 handled and committed", st, fg.committed())
			}
		})
	})

	t.Run("a handler past half the RebalanceTimeout is cancelled and its message stays uncommitted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fg := newFakeGroup(false)
			var calls atomic.Int32
			h := func(ctx context.Context, m kafka.Message) error {
				if m.Offset == 1 && calls.Add(1) == 1 {
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			}
			c := fakeConsumer(t, Config{RebalanceTimeout: 10 * time.Second}, h, fg)
			stop, served := serve(c)
			fg.msgs <- msgAt(0)
			fg.msgs <- msgAt(1)
			synctest.Wait()

			begin := time.Now()
			fg.rebalance()
			if took := time.Since(begin); took != 5*time.Second {
				t.Errorf("the rebalance took %v, want half the RebalanceTimeout (5s)", took)
			}
			if got := fg.committed(); got != 1 {
				t.Errorf("committed offset %d, want 1 (offset 0 only)", got)
			}
			if st := c.Stats(); st.Released != 1 || st.Failed != 0 || st.Handled != 1 {
				t.Errorf("stats %+v, want the cut message released, not failed", st)
			}

			fg.msgs <- msgAt(1) // delivered again in the next generation
			synctest.Wait()
			close(stop)
			<-served
			if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
				t.Fatal(err)
			}
			if got := fg.committed(); got != 2 {
				t.Errorf("committed offset %d, want 2 after the next generation", got)
			}
		})
	})

	t.Run("a handler that ignores cancellation is abandoned a second later, never committed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fg := newFakeGroup(false)
			release := make(chan struct{})
			h := func(_ context.Context, m kafka.Message) error {
				if m.Offset == 1 {
					<-release
				}
				return nil
			}
			c := fakeConsumer(t, Config{RebalanceTimeout: 10 * time.Second}, h, fg)
			stop, served := serve(c)
			fg.msgs <- msgAt(0)
			fg.msgs <- msgAt(1)
			synctest.Wait()

			begin := time.Now()
			fg.rebalance()
			if took := time.Since(begin); took != 6*time.Second {
				t.Errorf("the rebalance took %v, want 5s, then 1s after the cancellation", took)
			}
			close(release) // it succeeds after its generation's last commit
			synctest.Wait()
			if got, st := fg.committed(), c.Stats(); got != 1 || st.Handled != 2 || st.Uncommitted != 1 {
				t.Errorf("committed offset %d, stats %+v: want 1, and the late message handled but uncommitted", got, st)
			}
			close(stop)
			<-served
			if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
				t.Fatal(err)
			}
			if got := fg.committed(); got != 1 {
				t.Errorf("committed offset %d after the drain, want still 1", got)
			}
		})
	})

	t.Run("a retry wait ends at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fg := newFakeGroup(false)
			fail := func(context.Context, kafka.Message) error { return errors.New("down") }
			c := fakeConsumer(t, Config{Retry: Retry{Attempts: 5, Initial: time.Hour}}, fail, fg)
			stop, served := serve(c)
			fg.msgs <- msgAt(0)
			synctest.Wait()
			begin := time.Now()
			fg.rebalance()
			if took := time.Since(begin); took != 0 {
				t.Errorf("the rebalance took %v, want no wait for the retry schedule", took)
			}
			if st := c.Stats(); st.Released != 1 || fg.committed() != -1 {
				t.Errorf("stats %+v, committed %d: want the message released uncommitted", st, fg.committed())
			}
			close(stop)
			<-served
			if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
				t.Fatal(err)
			}
		})
	})
}
