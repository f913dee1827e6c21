package grpcentry_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/connectivity"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/health"
)

func TestMovesClientsOff(t *testing.T) {
	t.Run("at the stop an open connection is sent a GOAWAY, and RPCs go on on a new one", func(t *testing.T) {
		x := run(t, grpcentry.Config{}, &service{})
		ctx := ctxT(t)
		if _, err := x.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
			t.Fatal(err)
		}
		if st := x.conn.GetState(); st != connectivity.Ready {
			t.Fatalf("client connection %v, want READY", st)
		}
		x.endServe() // readiness withdrawn: the drain delay begins, everything still served
		if !x.conn.WaitForStateChange(ctx, connectivity.Ready) {
			t.Fatal("the client's connection stayed READY: it was sent no GOAWAY")
		}
		for i := range 3 {
			if _, err := x.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
				t.Errorf("RPC %d during the drain delay = %v", i, err)
			}
		}
		if err := waitFor(t, x.drain(failAfter), "Drain"); err != nil {
			t.Errorf("Drain = %v", err)
		}
		if r := x.s.DrainReport(); !strings.HasPrefix(r, "moved_off=1 ") {
			t.Errorf("DrainReport() = %q, want moved_off=1 first", r)
		}
	})

	t.Run("a stream open at the withdrawal finishes on its connection", func(t *testing.T) {
		proceed := make(chan struct{})
		svc := &service{stream: func(ctx context.Context, send func() error) error {
			for i := range 20 {
				if i == 1 {
					<-proceed // the rest once the client has had its GOAWAY
				}
				if err := send(); err != nil {
					return err
				}
			}
			return nil
		}}
		x := run(t, grpcentry.Config{}, svc)
		ctx := ctxT(t)
		st, err := x.client.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
		x.endServe()
		if !x.conn.WaitForStateChange(ctx, connectivity.Ready) {
			t.Fatal("the client's connection stayed READY: it was sent no GOAWAY")
		}
		close(proceed)
		n := 1
		for {
			_, err := st.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("stream after the GOAWAY: %v after %d messages", err, n)
			}
			n++
		}
		if n != 20 {
			t.Errorf("stream got %d messages, want 20", n)
		}
	})

	t.Run("the Monitor's draining moves them before the stop", func(t *testing.T) {
		var state health.State
		state.Set(health.StatusReady)
		m, err := health.NewMonitor(health.MonitorConfig{}, &state)
		if err != nil {
			t.Fatal(err)
		}
		x := run(t, grpcentry.Config{}, &service{}, grpcentry.WithHealth(m))
		ctx := ctxT(t)
		if _, err := x.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
			t.Fatal(err)
		}
		state.Set(health.StatusDraining) // Host.BeginDraining, PreStop: Serve still runs
		if !x.conn.WaitForStateChange(ctx, connectivity.Ready) {
			t.Fatal("the client's connection stayed READY: it was sent no GOAWAY")
		}
		if _, err := x.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
			t.Errorf("RPC after the withdrawal = %v", err)
		}
	})
}
