package grpcentry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
)

// An RPC admitted before the drain finishes with its answer; one that arrives after
// the Gate closed gets UNAVAILABLE; Drain returns nil once the first is done.
func TestDrainLetsInFlightUnaryFinishAndRefusesNew(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	svc := &service{unary: func(context.Context) error {
		close(entered)
		<-release
		return nil
	}}
	x := run(t, grpcentry.Config{}, svc)
	ctx := ctxT(t)
	first := make(chan error, 1)
	go func() {
		_, err := x.client.UnaryCall(ctx, &testpb.SimpleRequest{})
		first <- err
	}()
	waitFor(t, entered, "the first RPC's handler")

	drained := x.drain(5 * time.Second)
	// Keep calling until the drain refuses: each call is a real RPC, not a sleep.
	var err error
	for deadline := time.Now().Add(failAfter); time.Now().Before(deadline); {
		if _, err = x.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
			break
		}
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("RPC during the drain: %v, want UNAVAILABLE", err)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v with an RPC in flight", err)
	default:
	}
	close(release)
	if err := waitFor(t, first, "the first RPC"); err != nil {
		t.Fatalf("in-flight RPC: %v, want its answer", err)
	}
	if err := waitFor(t, drained, "Drain"); err != nil {
		t.Fatalf("Drain = %v", err)
	}
	if r := x.s.DrainReport(); !strings.Contains(r, "in_flight_left=0") {
		t.Errorf("DrainReport %q", r)
	}
}

// A streaming RPC is ended by the spread drain with UNAVAILABLE, and Drain returns
// within the spread window, in virtual time.
func TestDrainClosesStreamsWithAStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window = 200 * time.Millisecond
		x := runInBubble(t, grpcentry.Config{StreamDrainWindow: window}, &service{stream: ticking})
		ctx := ctxT(t)
		var streams []testpb.TestService_StreamingOutputCallClient
		for range 3 {
			st, err := x.client.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Recv(); err != nil { // the handler runs
				t.Fatal(err)
			}
			streams = append(streams, st)
		}
		start := time.Now()
		drained := x.drain(3 * time.Second)
		for i, st := range streams {
			var err error
			for err == nil {
				_, err = st.Recv()
			}
			if s := status.Convert(err); s.Code() != codes.Unavailable || !strings.Contains(s.Message(), "draining") {
				t.Errorf("stream %d ended with %v, want UNAVAILABLE from the drain", i, err)
			}
		}
		if err := waitFor(t, drained, "Drain"); err != nil {
			t.Fatalf("Drain = %v", err)
		}
		if d := time.Since(start); d > window {
			t.Errorf("Drain took %s of virtual time with a %s window", d, window)
		}
	})
}

// A stream whose handler ignores its ctx outlives the grace: Drain returns at its
// budget, to the instant in virtual time, Stop closes the connection within its own,
// and the client gets a status.
func TestStreamOutlivingTheGraceIsCutInBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		started := make(chan struct{})
		svc := &service{stream: func(_ context.Context, send func() error) error {
			_ = send()
			close(started)
			<-release
			return nil
		}}
		x := runInBubble(t, grpcentry.Config{StreamDrainWindow: 50 * time.Millisecond}, svc)
		st, err := x.client.StreamingOutputCall(ctxT(t), &testpb.StreamingOutputCallRequest{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, started, "the stream's handler")
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
		const budget = 300 * time.Millisecond
		start := time.Now()
		err = waitFor(t, x.drain(budget), "Drain")
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 RPCs still in flight") {
			t.Fatalf("Drain = %v, want the deadline with 1 RPC in flight", err)
		}
		if d := time.Since(start); d != budget {
			t.Fatalf("Drain took %s of virtual time with a %s budget, want exactly the budget", d, budget)
		}
		stopStart := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = x.s.Stop(ctx) // the handler still runs: Stop may report it, but returns
		if d := time.Since(stopStart); d > time.Second {
			t.Fatalf("Stop took %s of virtual time with a 1s budget", d)
		}
		if _, err := st.Recv(); status.Code(err) != codes.Unavailable {
			t.Fatalf("stream after Stop: %v, want UNAVAILABLE", err)
		}
	})
}

// A unary handler that blocks forever, ignoring its ctx, keeps neither Drain nor
// Stop past their budgets (virtual time: Drain ends at its 200ms, Stop within its
// 300ms).
func TestHandlerBlockingForeverDoesNotBlockStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		entered := make(chan struct{})
		svc := &service{unary: func(context.Context) error {
			close(entered)
			<-release
			return nil
		}}
		x := runInBubble(t, grpcentry.Config{}, svc)
		rpc := make(chan error, 1)
		go func() {
			_, err := x.client.UnaryCall(ctxT(t), &testpb.SimpleRequest{})
			rpc <- err
		}()
		waitFor(t, entered, "the handler")
		start := time.Now()
		if err := waitFor(t, x.drain(200*time.Millisecond), "Drain"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Drain = %v, want the deadline", err)
		}
		if d := time.Since(start); d != 200*time.Millisecond {
			t.Fatalf("Drain took %s of virtual time with a 200ms budget", d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_ = x.s.Stop(ctx)
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("Drain and Stop took %s of virtual time with 500ms of budgets", d)
		}
		if err := waitFor(t, rpc, "the RPC"); status.Code(err) != codes.Unavailable {
			t.Fatalf("RPC cut by Stop: %v, want UNAVAILABLE", err)
		}
	})
}

// A handler's panic becomes INTERNAL, is counted, and the server keeps serving.
func TestPanicBecomesInternal(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := &service{unary: func(context.Context) error { panic("boom") }}
	x := run(t, grpcentry.Config{}, svc, grpcentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	ctx := ctxT(t)
	if _, err := x.client.UnaryCall(ctx, &testpb.SimpleRequest{}); status.Code(err) != codes.Internal {
		t.Fatalf("RPC whose handler panicked: %v, want INTERNAL", err)
	}
	if _, err := x.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatalf("next RPC: %v", err)
	}
	if n := x.s.Stats().Panics; n != 1 {
		t.Errorf("Stats().Panics = %d", n)
	}
	want := `
		# HELP servicewright_grpc_panics_total gRPC handlers that panicked; each call was answered INTERNAL.
		# TYPE servicewright_grpc_panics_total counter
		servicewright_grpc_panics_total{entrypoint="grpc"} 1
	`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "servicewright_grpc_panics_total"); err != nil {
		t.Error(err)
	}
	got := testutil.ToFloat64(mustCounter(t, reg, "servicewright_grpc_requests_total",
		map[string]string{"method": "/grpc.testing.TestService/UnaryCall", "code": "INTERNAL"}))
	if got != 1 {
		t.Errorf("requests_total{UnaryCall,INTERNAL} = %v", got)
	}
}

// mustCounter finds one series of a gathered counter.
func mustCounter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
			c.Add(m.GetCounter().GetValue())
			return c
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return nil
}
