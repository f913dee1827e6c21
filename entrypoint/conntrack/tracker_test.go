package conntrack

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// pipes is an in-memory listener of net.Pipes, usable inside a synctest bubble.
type pipes struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipes() *pipes { return &pipes{conns: make(chan net.Conn), closed: make(chan struct{})} }

func (p *pipes) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}
func (p *pipes) Close() error   { p.once.Do(func() { close(p.closed) }); return nil }
func (p *pipes) Addr() net.Addr { return &net.UnixAddr{Name: "pipes", Net: "unix"} }

// dial connects a client; the accept loop must be running.
func (p *pipes) dial(t *testing.T) *bufio.ReadWriter {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close() })
	p.conns <- server
	return bufio.NewReadWriter(bufio.NewReader(client), bufio.NewWriter(client))
}

// lineServer answers each line "ok <line>", taking delay to do it, and marks the
// connection idle when nothing more is buffered: the hand-written server this
// package is for.
type lineServer struct {
	ln    *Listener
	delay time.Duration
	wg    sync.WaitGroup
	// idled, when set, is told (without blocking) each time a connection is marked
	// idle after its answer: the client reads the answer before that happens.
	idled chan struct{}
}

func (s *lineServer) serve() {
	defer s.wg.Wait()
	for {
		c, err := s.ln.AcceptConn()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.handle(c) })
	}
}

func (s *lineServer) handle(c *Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		time.Sleep(s.delay)
		if _, err := io.WriteString(c, "ok "+line); err != nil {
			return
		}
		if br.Buffered() == 0 {
			c.Idle()
			select {
			case s.idled <- struct{}{}:
			default:
			}
		}
	}
}

// ask sends line and returns the answer.
func ask(t *testing.T, rw *bufio.ReadWriter, line string) string {
	t.Helper()
	rw.WriteString(line + "\n")
	if err := rw.Flush(); err != nil {
		t.Fatalf("send %q: %v", line, err)
	}
	got, err := rw.ReadString('\n')
	if err != nil {
		t.Fatalf("answer to %q: %v", line, err)
	}
	return strings.TrimSuffix(got, "\n")
}

func newTracker(t *testing.T, cfg Config) *Tracker {
	t.Helper()
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestNewRefusesBadConfig(t *testing.T) {
	_, err := New(Config{MaxConns: -1, GoodbyeTimeout: -1, IdleCloseWindow: -1})
	var ce *fault.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want a *fault.ConfigError", err)
	}
	for _, f := range []string{"MaxConns", "GoodbyeTimeout", "IdleCloseWindow"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("%v does not name %s", err, f)
		}
	}
	if _, err := New(Config{MaxConns: 3}, WithListenerLayer(func(l net.Listener) net.Listener { return l })); err == nil {
		t.Error("New accepted MaxConns with a listener layer")
	}
}

// Idle connections are told goodbye and closed oldest first, spread over the
// window; the drain then returns nil at once.
func TestDrainClosesIdleSpread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTracker(t, Config{Name: "lines", Goodbye: []byte("bye\n"), IdleCloseWindow: 4 * time.Second})
		p := newPipes()
		s := &lineServer{ln: tr.Listener(p)}
		served := make(chan struct{})
		go func() { defer close(served); s.serve() }()

		var clients []*bufio.ReadWriter
		for i := range 4 {
			c := p.dial(t)
			if got := ask(t, c, "hello"); got != "ok hello" {
				t.Fatalf("client %d: %q", i, got)
			}
			clients = append(clients, c)
		}
		synctest.Wait()
		if n := tr.Busy(); n != 0 {
			t.Fatalf("busy = %d after every answer, want 0", n)
		}

		began := time.Now()
		goodbyes := make(chan time.Duration, len(clients))
		for _, c := range clients {
			go func() {
				line, _ := c.ReadString('\n')
				if line != "bye\n" {
					t.Errorf("an idle client read %q, want the goodbye", line)
				}
				if _, err := c.ReadByte(); err != io.EOF {
					t.Errorf("after the goodbye: %v, want EOF", err)
				}
				goodbyes <- time.Since(began)
			}()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := tr.Drain(ctx); err != nil {
			t.Fatalf("Drain = %v", err)
		}
		var last time.Duration
		for range clients {
			last = max(last, <-goodbyes)
		}
		if last != 3*time.Second {
			t.Errorf("the last idle connection was closed after %s, want 3s (4 spread over 4s)", last)
		}
		<-served
		st := tr.Stats()
		if st.ClosedIdle != 4 || st.Open != 0 || st.BusyAtDeadline != -1 {
			t.Errorf("Stats = %+v, want 4 closed idle, none open, no deadline", st)
		}
	})
}

// A request in flight when the drain begins is answered; then the connection gets
// the goodbye and is closed.
func TestDrainAnswersBusyThenCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTracker(t, Config{Name: "lines", Goodbye: []byte("bye\n")})
		p := newPipes()
		s := &lineServer{ln: tr.Listener(p), delay: 2 * time.Second}
		served := make(chan struct{})
		go func() { defer close(served); s.serve() }()

		c := p.dial(t)
		c.WriteString("slow\n")
		c.Flush()
		synctest.Wait() // the server holds the line
		if n := tr.Busy(); n != 1 {
			t.Fatalf("busy = %d with a line being answered, want 1", n)
		}
		drained := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			drained <- tr.Drain(ctx)
		}()
		if got, err := c.ReadString('\n'); got != "ok slow\n" || err != nil {
			t.Fatalf("answer = %q, %v; want ok slow", got, err)
		}
		if got, err := c.ReadString('\n'); got != "bye\n" || err != nil {
			t.Fatalf("after the answer = %q, %v; want the goodbye", got, err)
		}
		if err := <-drained; err != nil {
			t.Fatalf("Drain = %v", err)
		}
		<-served
		if st := tr.Stats(); st.ClosedAfterAnswer != 1 || st.ClosedIdle != 0 {
			t.Errorf("Stats = %+v, want 1 closed after its answer", st)
		}
	})
}

// A connection still busy at the drain's deadline is reported and left to Close.
func TestDrainDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTracker(t, Config{Name: "lines"})
		p := newPipes()
		s := &lineServer{ln: tr.Listener(p), delay: time.Hour}
		served := make(chan struct{})
		go func() { defer close(served); s.serve() }()
		c := p.dial(t)
		c.WriteString("forever\n")
		c.Flush()
		synctest.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		began := time.Now()
		err := tr.Drain(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 connections still busy") {
			t.Fatalf("Drain = %v, want the deadline with 1 busy", err)
		}
		if d := time.Since(began); d != 5*time.Second {
			t.Errorf("Drain took %s, want its 5s", d)
		}
		if rep := tr.Report(); !strings.Contains(rep, "busy_at_deadline=1") {
			t.Errorf("Report() = %q, want busy_at_deadline=1", rep)
		}
		tr.Close()
		if err := tr.Close(); err != nil { // twice
			t.Errorf("second Close = %v", err)
		}
		<-served // the handler's write fails once closed, after its sleep
	})
}

// Close before any Accept closes the listener: a bound entrypoint stopped before
// it served.
func TestCloseBeforeServe(t *testing.T) {
	tr := newTracker(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr.Listener(ln)
	if err := tr.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
	}
}

// Input that arrives once the drain has decided to close an idle connection is not
// handed to the entrypoint, which would answer it after the goodbye: Read fails as
// on a closed connection, and the input is counted.
func TestLateInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTracker(t, Config{})
		p := newPipes()
		ln := tr.Listener(p)
		accepted := make(chan *Conn, 1)
		go func() {
			c, _ := ln.AcceptConn()
			accepted <- c
		}()
		client := p.dial(t)
		c := <-accepted
		c.Idle()
		if !c.claimIdle() { // the drain's turn comes for it
			t.Fatal("an idle connection was not claimed")
		}
		read := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 8))
			read <- err
		}()
		client.WriteString("late\n")
		client.Flush()
		if err := <-read; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read of late input = %v, want net.ErrClosed", err)
		}
		c.goodbye()
		if st := tr.Stats(); st.LateInput != 1 || st.Open != 0 || st.Busy != 0 {
			t.Errorf("Stats = %+v, want 1 late input and the connection closed", st)
		}
	})
}

// The Gates count connections only from the first Wait on: a connection that turned
// busy, idle and busy again before it is counted by the Wait's sweep, one that goes
// idle after it is let go, and input on an idle one is counted again.
func TestWaitCountsConnectionsBusyBeforeIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTracker(t, Config{Name: "lines"})
		p := newPipes()
		s := &lineServer{ln: tr.Listener(p), delay: 2 * time.Second}
		served := make(chan struct{})
		go func() { defer close(served); s.serve() }()

		a, b := p.dial(t), p.dial(t)
		for _, c := range []*bufio.ReadWriter{a, b} { // both answered once: idle
			c.WriteString("one\n")
			c.Flush()
			if got, err := c.ReadString('\n'); got != "ok one\n" || err != nil {
				t.Fatalf("answer = %q, %v", got, err)
			}
		}
		synctest.Wait()
		if n := tr.Busy(); n != 0 {
			t.Fatalf("busy = %d with both connections idle, want 0", n)
		}
		a.WriteString("two\n")
		a.Flush()
		synctest.Wait() // a is busy again, before anything counted it
		if n := tr.Busy(); n != 1 {
			t.Fatalf("busy = %d with a line being answered, want 1", n)
		}
		waited := make(chan error, 1)
		go func() { waited <- tr.Wait(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("Wait = %v while a connection is busy", err)
		default:
		}
		if got, err := a.ReadString('\n'); got != "ok two\n" || err != nil {
			t.Fatalf("answer = %q, %v", got, err)
		}
		if err := <-waited; err != nil {
			t.Fatalf("Wait = %v", err)
		}
		b.WriteString("three\n") // input on a connection idle when the counting began
		b.Flush()
		synctest.Wait()
		if n := tr.Busy(); n != 1 {
			t.Errorf("busy = %d once counted, with a line being answered, want 1", n)
		}
		go func() { waited <- tr.WaitSerial(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("WaitSerial = %v while a connection is busy", err)
		default:
		}
		if got, err := b.ReadString('\n'); got != "ok three\n" || err != nil {
			t.Fatalf("answer = %q, %v", got, err)
		}
		if err := <-waited; err != nil {
			t.Fatalf("WaitSerial = %v", err)
		}
		if n := tr.Busy(); n != 0 {
			t.Errorf("busy = %d after the answers, want 0", n)
		}
		tr.Close()
		<-served
	})
}
