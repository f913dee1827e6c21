package hosttest_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// udpEcho is a UDP entrypoint on entrypoint.Runner: it answers each datagram in
// upper case after delay. Its drain stops reading — a read deadline in the past ends
// the blocked ReadFrom — and waits, through the Runner's Gate, for the datagrams in
// hand; Stop closes the socket.
type udpEcho struct {
	*entrypoint.Runner
	conn  net.PacketConn
	delay time.Duration
}

func newUDPEcho(conn net.PacketConn, delay time.Duration) *udpEcho {
	return &udpEcho{Runner: entrypoint.NewRunner("udp-echo"), conn: conn, delay: delay}
}

func (u *udpEcho) Name() string                   { return "udp-echo" }
func (u *udpEcho) Bind(ctx context.Context) error { return u.Runner.Bind(ctx, nil) }
func (u *udpEcho) Serve(ctx context.Context, stop <-chan struct{}) error {
	return u.Runner.Serve(ctx, stop, u.work)
}

func (u *udpEcho) Stop(ctx context.Context) error {
	err := u.Runner.Stop(ctx)
	u.conn.Close()
	return err
}

func (u *udpEcho) work(_ context.Context, draining <-chan struct{}) error {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-draining:
			u.conn.SetReadDeadline(time.Now()) // ends the blocked read
		case <-done:
		}
	})
	defer wg.Wait()
	defer close(done)
	buf := make([]byte, 1500)
	for {
		n, from, err := u.conn.ReadFrom(buf)
		select {
		case <-draining:
			return nil
		default:
		}
		if err != nil {
			return err
		}
		leave, ok := u.Gate().Enter()
		if !ok {
			return nil
		}
		reply := bytes.ToUpper(buf[:n])
		go func() {
			defer leave()
			time.Sleep(u.delay)
			u.conn.WriteTo(reply, from)
		}()
	}
}

// TestDatagramInFlightSurvivesSIGTERM is the test docs/testing.md shows, verbatim: a
// datagram in hand when the stop begins is answered, in virtual time.
func TestDatagramInFlightSurvivesSIGTERM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server, client := hosttest.NewPacketPair()
		defer client.Close()
		echo := newUDPEcho(server, 2*time.Second) // each answer takes two virtual seconds
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "echo",
			Entrypoints: []host.Registration{{Entrypoint: echo}},
			Budgets:     host.Budgets{DrainDelay: time.Second},
		})
		x.WaitStage(host.StageServe)

		client.WriteTo([]byte("hello"), server.LocalAddr())
		synctest.Wait() // the datagram is in hand
		x.Stop()        // as SIGTERM would
		buf := make([]byte, 64)
		n, _, err := client.ReadFrom(buf)
		if err != nil || string(buf[:n]) != "HELLO" {
			t.Fatalf("the datagram in flight got %q, %v", buf[:n], err)
		}
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}
