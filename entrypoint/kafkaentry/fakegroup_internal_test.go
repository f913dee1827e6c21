package kafkaentry

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/segmentio/kafka-go"
)

// The fakes the lifecycle tests run the consumer against (lifecycle_internal_test.go).

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
