package kafkaentry

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/segmentio/kafka-go"
)

// These tests run the consumer against a fake reader in a synctest bubble, so that
// timeouts and retry schedules are checked exactly, in virtual time.

// fakeReader hands out the messages sent on msgs and records commits. Its Close
// blocks until release is closed, like a kafka-go Close that hangs, unless release
// is nil.
type fakeReader struct {
	msgs    chan kafka.Message
	release chan struct{}
	closing chan struct{} // closed when Close is called

	mu      sync.Mutex
	commits [][]kafka.Message
}

func newFakeReader(hangingClose bool) *fakeReader {
	f := &fakeReader{msgs: make(chan kafka.Message), closing: make(chan struct{})}
	if hangingClose {
		f.release = make(chan struct{})
	}
	return f
}

func (f *fakeReader) FetchMessage(ctx context.Context) (kafka.Message, error) {
	select {
	case m := <-f.msgs:
		return m, nil
	case <-ctx.Done():
		return kafka.Message{}, ctx.Err()
	case <-f.closing:
		return kafka.Message{}, io.EOF
	}
}

func (f *fakeReader) CommitMessages(_ context.Context, msgs ...kafka.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = append(f.commits, slices.Clone(msgs))
	return nil
}

func (f *fakeReader) Close() error {
	close(f.closing)
	if f.release != nil {
		<-f.release
	}
	return nil
}

// committed returns the offset committed last for partition 0 of topic "t" (the
// last handled message, as kafka-go is given it), or -1.
func (f *fakeReader) committed() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	last := int64(-1)
	for _, c := range f.commits {
		for _, m := range c {
			last = max(last, m.Offset)
		}
	}
	return last
}

func (f *fakeReader) commitCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.commits)
}

func msgAt(offset int64) kafka.Message {
	return kafka.Message{Topic: "t", Partition: 0, Offset: offset, Value: []byte("v")}
}

// fakeConsumer makes a consumer bound to r, bypassing Bind's network checks.
func fakeConsumer(t *testing.T, cfg Config, h Handler, r reader, opts ...Option) *Consumer {
	t.Helper()
	cfg.Brokers, cfg.GroupID, cfg.Topics = []string{"127.0.0.1:9"}, "g", []string{"t"}
	c, err := New(cfg, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c.reader, c.dlq, c.state = r, c.opts.dlq, stateBound
	return c
}

// serve runs Serve in a goroutine; closing the returned stop ends it.
func serve(c *Consumer) (stop chan struct{}, served chan error) {
	stop, served = make(chan struct{}), make(chan error, 1)
	go func() { served <- c.Serve(context.Background(), stop) }()
	return stop, served
}

func TestHangingClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fr := newFakeReader(true)
		c := fakeConsumer(t, Config{CloseTimeout: 3 * time.Second}, func(context.Context, kafka.Message) error { return nil }, fr)
		stop, served := serve(c)
		fr.msgs <- msgAt(0)
		fr.msgs <- msgAt(1)
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
		if got := fr.committed(); got != 1 {
			t.Errorf("committed up to offset %d before closing, want 1", got)
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
		close(fr.release) // let the abandoned Close finish, so the bubble empties
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
		fr := newFakeReader(false)
		c := fakeConsumer(t, Config{Retry: Retry{Attempts: 4, Initial: 100 * time.Millisecond, Max: 250 * time.Millisecond}}, h, fr)
		stop, served := serve(c)
		fr.msgs <- msgAt(0)
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
		if got := fr.committed(); got != 0 {
			t.Errorf("committed %d, want offset 0 once handled", got)
		}
		if st := c.Stats(); st.Failed != 3 || st.Handled != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestCommitBatching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fr := newFakeReader(false)
		c := fakeConsumer(t, Config{CommitBatch: 10, CommitInterval: time.Minute}, func(context.Context, kafka.Message) error { return nil }, fr)
		stop, served := serve(c)
		for i := range 5 {
			fr.msgs <- msgAt(int64(i))
		}
		synctest.Wait()
		if n := fr.commitCount(); n != 0 {
			t.Fatalf("%d commits after 5 messages, want none before the batch or the interval", n)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n, got := fr.commitCount(), fr.committed(); n != 1 || got != 4 {
			t.Fatalf("after the interval: %d commits up to %d, want 1 up to offset 4", n, got)
		}
		for i := 5; i < 15; i++ {
			fr.msgs <- msgAt(int64(i))
		}
		synctest.Wait()
		if n, got := fr.commitCount(), fr.committed(); n != 2 || got != 14 {
			t.Fatalf("after a batch of 10: %d commits up to %d, want 2 up to offset 14", n, got)
		}
		close(stop)
		<-served
		if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
			t.Fatal(err)
		}
		if n := fr.commitCount(); n != 2 {
			t.Errorf("%d commits, want no empty commit at the drain", n)
		}
	})
}

func TestDrainReleasesRetryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fr := newFakeReader(false)
		fail := func(context.Context, kafka.Message) error { return errors.New("down") }
		c := fakeConsumer(t, Config{Retry: Retry{Attempts: 5, Initial: time.Hour}}, fail, fr)
		stop, served := serve(c)
		fr.msgs <- msgAt(0)
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
		if got := fr.committed(); got != -1 {
			t.Errorf("committed offset %d, want nothing", got)
		}
	})
}

func TestStopCancelsHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fr := newFakeReader(false)
		dlq := &fakeWriter{}
		h := func(ctx context.Context, _ kafka.Message) error {
			<-ctx.Done()
			return ctx.Err()
		}
		c := fakeConsumer(t, Config{OnFailure: DeadLetter("t.dlq")}, h, fr, WithDeadLetterWriter(dlq))
		stop, served := serve(c)
		fr.msgs <- msgAt(0)
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
		if st := c.Stats(); st.Failed != 0 || st.DeadLettered != 0 || st.Released != 1 || fr.committed() != -1 || dlq.count() != 0 {
			t.Errorf("stats %+v, committed %d, dead letters %d: a cancelled handler must not count as a failure",
				st, fr.committed(), dlq.count())
		}
	})
}

func TestDeadLetterWriteRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fr := newFakeReader(false)
		dlq := &fakeWriter{failures: 2}
		fail := func(context.Context, kafka.Message) error { return ErrUndecodable }
		c := fakeConsumer(t, Config{OnFailure: DeadLetter("t.dlq")}, fail, fr, WithDeadLetterWriter(dlq))
		stop, served := serve(c)
		fr.msgs <- msgAt(0)
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
		if got := fr.committed(); got != 0 {
			t.Errorf("committed %d, want 0 once dead-lettered", got)
		}
	})
}

func TestFailureAfterStopIsReportedByDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fr := newFakeReader(false)
		fail := func(context.Context, kafka.Message) error { return ErrUndecodable }
		c := fakeConsumer(t, Config{}, fail, fr)
		stop, served := serve(c)
		close(stop)
		if err := <-served; err != nil {
			t.Fatal(err)
		}
		fr.msgs <- msgAt(0) // during the drain delay
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

// fakeWriter is a dead-letter writer that fails its first writes.
type fakeWriter struct {
	mu       sync.Mutex
	failures int
	attempts int
	written  []kafka.Message
}

func (w *fakeWriter) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.attempts++
	if w.attempts <= w.failures {
		return errors.New("broker gone")
	}
	w.written = append(w.written, msgs...)
	return nil
}

func (w *fakeWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.written)
}
