package kafkaentry

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/segmentio/kafka-go"
)

// These tests run the consumer against a fake group and fake partition readers in
// a synctest bubble, so that timeouts, retry schedules and rebalances are checked
// exactly, in virtual time.

// fakeGroup is a group of one member with one partition, t/0. Next hands out the
// generations that offer makes; rebalance ends the current one the way kafka-go
// does — its ctx ends and the group waits for the functions started in it — and
// offers the next, starting at the committed offset. Close ends the generation too,
// then hangs until release is closed, like a kafka-go Close that hangs, unless
// release is nil.
type fakeGroup struct {
	msgs    chan kafka.Message // t/0's messages, for whichever reader fetches
	release chan struct{}

	next      chan *generation
	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	genID   int32
	current *fakeGeneration
	commits []int64 // the offsets committed for t/0 (the next to read)
	opened  []int64 // the offsets t/0's readers were opened at
}

// fakeGeneration accounts for the functions started in a generation, as
// kafka.Generation does.
type fakeGeneration struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	ended   bool
	running sync.WaitGroup
}

func (g *fakeGeneration) start(fn func(context.Context)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended { // like kafka-go: run it, with its ctx already done, and do not wait for it
		go fn(g.ctx)
		return
	}
	g.running.Add(1)
	go func() {
		defer g.running.Done()
		fn(g.ctx)
	}()
}

func (g *fakeGeneration) end() {
	g.mu.Lock()
	g.ended = true
	g.cancel()
	g.mu.Unlock()
	g.running.Wait()
}

func newFakeGroup(hangingClose bool) *fakeGroup {
	g := &fakeGroup{msgs: make(chan kafka.Message), next: make(chan *generation, 1), closed: make(chan struct{})}
	if hangingClose {
		g.release = make(chan struct{})
	}
	g.offer(kafka.FirstOffset)
	return g
}

// offer makes the next generation, in which t/0 starts at offset.
func (g *fakeGroup) offer(offset int64) {
	ctx, cancel := context.WithCancel(context.Background())
	fgen := &fakeGeneration{ctx: ctx, cancel: cancel}
	g.mu.Lock()
	g.genID++
	id := g.genID
	g.current = fgen
	g.mu.Unlock()
	g.next <- &generation{
		id:          id,
		assignments: map[string][]kafka.PartitionAssignment{"t": {{ID: 0, Offset: offset}}},
		start:       fgen.start,
		commit: func(offsets map[string]map[int]int64) error {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.genID != id {
				return kafka.IllegalGeneration
			}
			g.commits = append(g.commits, offsets["t"][0])
			return nil
		},
	}
}

// endGeneration ends the current generation and waits for its functions.
func (g *fakeGroup) endGeneration() {
	g.mu.Lock()
	cur := g.current
	g.mu.Unlock()
	cur.end()
}

// rebalance ends the current generation and offers the next.
func (g *fakeGroup) rebalance() {
	g.endGeneration()
	offset := g.committed()
	if offset < 0 {
		offset = kafka.FirstOffset
	}
	g.offer(offset)
}

func (g *fakeGroup) Next(ctx context.Context) (*generation, error) {
	select {
	case gen := <-g.next:
		return gen, nil
	case <-g.closed:
		return nil, kafka.ErrGroupClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *fakeGroup) Close() error {
	g.closeOnce.Do(func() { close(g.closed) })
	g.endGeneration()
	if g.release != nil {
		<-g.release
	}
	return nil
}

// open is the consumer's openReader.
func (g *fakeGroup) open(_ string, _ int, offset int64) (partitionReader, error) {
	g.mu.Lock()
	g.opened = append(g.opened, offset)
	g.mu.Unlock()
	return &fakeReader{msgs: g.msgs, closing: make(chan struct{})}, nil
}

// committed returns the offset committed last for t/0 (the next to read), or -1.
func (g *fakeGroup) committed() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.commits) == 0 {
		return -1
	}
	return g.commits[len(g.commits)-1]
}

func (g *fakeGroup) commitCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.commits)
}

func (g *fakeGroup) openedAt() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.opened)
}

// fakeReader is one reader of t/0.
type fakeReader struct {
	msgs    <-chan kafka.Message
	closing chan struct{}
	once    sync.Once
}

func (r *fakeReader) FetchMessage(ctx context.Context) (kafka.Message, error) {
	select {
	case m := <-r.msgs:
		return m, nil
	case <-ctx.Done():
		return kafka.Message{}, ctx.Err()
	case <-r.closing:
		return kafka.Message{}, io.EOF
	}
}

func (r *fakeReader) Close() error {
	r.once.Do(func() { close(r.closing) })
	return nil
}

func msgAt(offset int64) kafka.Message {
	return kafka.Message{Topic: "t", Partition: 0, Offset: offset, Value: []byte("v")}
}

// fakeConsumer makes a consumer in g, bypassing Bind's network checks.
func fakeConsumer(t *testing.T, cfg Config, h Handler, g *fakeGroup, opts ...Option) *Consumer {
	t.Helper()
	cfg.Brokers, cfg.GroupID, cfg.Topics = []string{"127.0.0.1:9"}, "g", []string{"t"}
	c, err := New(cfg, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c.openReader = g.open
	c.base.Lock()
	c.dlq = c.opts.dlq
	c.joinLocked(context.Background(), g)
	c.base.Unlock()
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
