package conntrack

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/transport"
)

// Clients queued when the drain begins, some of which never send their request: the
// server reads with an hour's deadline (as net/http's header timeout would hold a
// connection), yet the slow ones' reads fail after BacklogReadTimeout, so the drain
// ends long before its deadline; the client that had sent its line is answered.
func TestBacklogReadTimeout(t *testing.T) {
	if !transport.CanAcceptQueued {
		t.Skip("no non-blocking accept(2) here")
	}
	const slow = 3
	tr := newTracker(t, Config{Name: "lines", Goodbye: []byte("bye\n"), BacklogReadTimeout: 100 * time.Millisecond})
	ln := tr.Listener(mustListen(t, "tcp"))
	var mu sync.Mutex
	var readErrs []error
	handle := func(c *Conn) {
		defer c.Close()
		if err := c.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
			t.Error(err)
		}
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		if err != nil {
			mu.Lock()
			readErrs = append(readErrs, err)
			mu.Unlock()
			return
		}
		io.WriteString(c, "ok "+line)
		c.Idle()
		br.ReadString('\n') // the end, once the drain closed it
	}
	release := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		var wg sync.WaitGroup
		defer wg.Wait()
		// One connection accepted, then the loop holds until the drain began, so
		// that the others wait in the kernel's queue.
		c, err := ln.AcceptConn()
		if err != nil {
			t.Error(err)
			return
		}
		wg.Go(func() { handle(c) })
		<-release
		for {
			c, err := ln.AcceptConn()
			if err != nil {
				return
			}
			wg.Go(func() { handle(c) })
		}
	}()
	first := dialLine(t, ln.Addr())
	if got := askLine(t, first, "first"); got != "ok first\n" {
		t.Fatalf("first = %q", got)
	}
	ready := dialLine(t, ln.Addr())
	ready.WriteString("queued\n")
	if err := ready.Flush(); err != nil {
		t.Fatal(err)
	}
	for range slow {
		dialLine(t, ln.Addr())
	}

	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), failAfter)
		defer cancel()
		drained <- tr.Drain(ctx)
	}()
	select {
	case <-ln.backlog.drainBegan:
	case <-time.After(failAfter):
		t.Fatal("the drain did not begin")
	}
	close(release)
	if err := <-drained; err != nil {
		tr.Close() // the slow clients' reads end now
		<-served
		t.Fatalf("Drain = %v, want nil: the slow clients' reads must end at BacklogReadTimeout", err)
	}
	<-served
	if got, err := io.ReadAll(first); string(got) != "bye\n" || err != nil {
		t.Errorf("the idle client read %q, %v; want the goodbye", got, err)
	}
	if got, err := io.ReadAll(ready); string(got) != "ok queued\nbye\n" || err != nil {
		t.Errorf("the client that had sent its line read %q, %v; want its answer and the goodbye", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(readErrs) != slow {
		t.Fatalf("%d reads failed, want the %d slow clients': %v", len(readErrs), slow, readErrs)
	}
	for _, err := range readErrs {
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("a slow client's read ended with %v, want its deadline", err)
		}
	}
	if st := tr.Stats(); st.BacklogAnswered != slow+1 {
		t.Errorf("Stats = %+v, want %d taken from the backlog", st, slow+1)
	}
}

// A read deadline later than the connection's own limit, or none, is brought
// forward to it; an earlier one stands. A connection not taken from the queue by
// the drain has no limit.
func TestReadDeadlineBroughtForward(t *testing.T) {
	by := time.Unix(1000, 0)
	c := &Conn{readBy: by}
	for _, d := range []struct{ set, want time.Time }{
		{time.Time{}, by},
		{by.Add(time.Second), by},
		{by.Add(-time.Second), by.Add(-time.Second)},
	} {
		if got := c.readDeadline(d.set); !got.Equal(d.want) {
			t.Errorf("readDeadline(%v) = %v, want %v", d.set, got, d.want)
		}
	}
	if got := (&Conn{}).readDeadline(time.Time{}); !got.IsZero() {
		t.Errorf("without a limit: readDeadline(zero) = %v, want zero", got)
	}
}
