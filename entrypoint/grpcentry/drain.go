package grpcentry

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/internal/transport"
	"github.com/servicewright/servicewright/internal/wait"
)

// Drain stops intake and lets what was admitted finish, closing streams a few at a
// time so that their clients reconnect elsewhere gradually.
//
// In order, Drain: answers NOT_SERVING in the health service for good and ends every
// Health/Watch stream with UNAVAILABLE (they would otherwise hold GracefulStop for
// the whole grace); closes the Gate, so that every RPC not yet admitted, on a new or
// an open connection, is answered UNAVAILABLE, which clients retry elsewhere; starts
// grpc.Server.GracefulStop, which closes the listener and sends every connection a
// GOAWAY; closes the streaming RPCs still open spread over min(StreamDrainWindow, the
// time left on ctx), each ending with UNAVAILABLE unless its handler returned a
// status of its own; and waits for the admitted RPCs and GracefulStop. It returns
// nil once nothing admitted is in flight and GracefulStop has returned.
//
// Once no admitted RPC is left, GracefulStop still waits for every connection to
// close. Drain gives them a second (or what is left of ctx, if less), then closes
// those still open with grpc.Server.Stop and returns nil: a connection with
// nothing admitted on it — a client that ignores the GOAWAY, or keeps opening and
// resetting streams — is not worth the grace. The drain report counts them
// (connections_cut).
//
// When ctx is done while admitted RPCs are in flight, Drain returns an error
// wrapping ctx.Err() that tells how many (and how many of them are streams), and
// leaves them to Stop. It never waits past ctx: GracefulStop, which takes no context
// and waits for every handler, runs on a goroutine of its own.
//
// Before Serve it closes the listener and returns nil; after Stop it does nothing.
func (s *Server) Drain(ctx context.Context) error {
	s.base.Lock()
	turn := s.base.Drain()
	s.base.Unlock()
	switch turn {
	case entrypoint.Idle:
		return nil
	case entrypoint.Unserved:
		s.gate.Close()
		return s.closeListener()
	}

	start := time.Now()
	s.endHealth()
	s.gate.Close()
	graceful := s.startGracefulStop()
	list := s.streams.Snapshot(true)
	_ = entrypoint.Spread(ctx, s.cfg.StreamDrainWindow, list, (*stream).drain)
	waitErr := s.gate.Wait(ctx)
	cut := 0
	if waitErr == nil {
		cut = s.awaitConnections(ctx, graceful)
	}
	inFlight := s.InFlight()
	moved := 0
	if s.resets != nil {
		moved = s.resets.leaving.movedOff()
	}
	s.setReport(fmt.Sprintf("moved_off=%d streams=%d in_flight_left=%d refused=%d connections_cut=%d took=%s",
		moved, len(list), inFlight, s.refused.Load(), cut, time.Since(start).Round(time.Millisecond)))
	if waitErr != nil {
		return fmt.Errorf("%s: drain: %d RPCs still in flight (%d of them streams): %w",
			s.cfg.Name, inFlight, len(s.streams.Snapshot(false)), ctx.Err())
	}
	if err := s.serving.TakeErr(); err != nil {
		return fmt.Errorf("%s: serve: %w", s.cfg.Name, err)
	}
	return nil
}

// connectionQuiet is how long Drain lets connections close on their own, once the
// last admitted RPC has ended, before it closes those still open.
const connectionQuiet = time.Second

// awaitConnections waits for GracefulStop, which returns once every connection has
// closed, for connectionQuiet or until ctx is done. Then, with no admitted RPC left
// to wait for, it closes the connections still open with grpc.Server.Stop: a client
// that ignores the GOAWAY, or keeps opening streams that are refused, holds nothing
// that a wait would save. It returns how many connections it closed.
func (s *Server) awaitConnections(ctx context.Context, graceful <-chan struct{}) int {
	t := time.NewTimer(connectionQuiet)
	defer t.Stop()
	select {
	case <-graceful:
		return 0
	case <-t.C:
	case <-ctx.Done():
	}
	open := s.Connections()
	s.log.Info("grpc drain: closing connections still open after their RPCs ended",
		zap.Int("connections", open), zap.Duration("waited", connectionQuiet))
	cut, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait.AbandonAfter)
	defer cancel()
	select {
	case <-s.startStop():
	case <-cut.Done():
	}
	return open
}

// Stop cuts off whatever Drain left: it closes the Gate, ends the health Watch
// streams, cancels every stream's ctx with cause entrypoint.ErrStreamDrained and calls
// grpc.Server.Stop, which closes the listener and every connection (their RPCs end
// UNAVAILABLE on the client side, and each running handler's ctx is cancelled). It
// returns nil once Stop and the serving goroutine have returned.
//
// grpc.Server.Stop runs on a goroutine of its own, so that a handler that blocks
// forever, ignoring its ctx, can never keep Stop past ctx: when ctx is done first,
// Stop returns an error wrapping ctx.Err() that tells how many handlers still run,
// and leaves them (a handler cannot be stopped from outside).
//
// Stop may be called without Drain, and more than once. Before Serve it closes the
// listener; before Bind it does nothing.
func (s *Server) Stop(ctx context.Context) error {
	s.base.Lock()
	turn := s.base.Stop()
	s.base.Unlock()
	switch turn {
	case entrypoint.Idle:
		return nil
	case entrypoint.Unserved:
		s.gate.Close()
		return s.closeListener()
	}
	if err := wait.Await(ctx, s.cutAll()); err != nil {
		return fmt.Errorf("%s: stop: grpc.Server.Stop did not return, %d handlers still running: %w",
			s.cfg.Name, s.InFlight(), err)
	}
	return s.serving.Wait(ctx)
}

// cutAll closes everything without waiting: the health service for good, the Gate,
// every stream (cancelled with entrypoint.ErrStreamDrained), and the grpc.Server with
// its listener and connections (grpc.Server.Stop, on a goroutine of its own). It
// returns the channel closed when grpc.Server.Stop has returned.
func (s *Server) cutAll() <-chan struct{} {
	s.endHealth()
	s.gate.Close()
	for _, st := range s.streams.Snapshot(true) {
		st.drain()
	}
	return s.startStop()
}

// endHealth withdraws the health service for good and ends the subscription to the
// Monitor.
func (s *Server) endHealth() {
	s.health.withdraw(true)
	s.base.Lock()
	unsub := s.unsubscribe
	s.unsubscribe = nil
	s.base.Unlock()
	if unsub != nil {
		unsub()
	}
}

// startGracefulStop runs GracefulStop once, on its own goroutine, and returns the
// channel closed when it returns.
func (s *Server) startGracefulStop() <-chan struct{} { return s.once(&s.graceful, s.grpc.GracefulStop) }

// startStop runs grpc.Server.Stop once, on its own goroutine, and returns the channel
// closed when it returns.
func (s *Server) startStop() <-chan struct{} { return s.once(&s.stopped, s.grpc.Stop) }

// once starts f on a goroutine of its own the first time, recording in *done the
// channel closed when it returns, and returns that channel every time.
func (s *Server) once(done *chan struct{}, f func()) <-chan struct{} {
	s.base.Lock()
	defer s.base.Unlock()
	if *done == nil {
		ch := make(chan struct{})
		*done = ch
		go func() {
			defer close(ch)
			f()
		}()
	}
	return *done
}

func (s *Server) setReport(r string) {
	s.base.Lock()
	s.report = r
	s.base.Unlock()
}

func (s *Server) closeListener() error { return transport.CloseListener(s.ln, s.cfg.Name) }
