package grpcentry_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/health"
)

func monitor(t *testing.T, st *health.State, cfg health.MonitorConfig) *health.Monitor {
	t.Helper()
	m, err := health.NewMonitor(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// watch opens Health/Watch for the whole server and returns its answers.
func (x *running) watch(ctx context.Context) (<-chan healthpb.HealthCheckResponse_ServingStatus, <-chan error) {
	x.t.Helper()
	w, err := x.health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		x.t.Fatal(err)
	}
	got, end := make(chan healthpb.HealthCheckResponse_ServingStatus, 16), make(chan error, 1)
	go func() {
		for {
			r, err := w.Recv()
			if err != nil {
				end <- err
				return
			}
			got <- r.GetStatus()
		}
	}()
	return got, end
}

// serving waits for SERVING: until the Monitor's first verdict the answer is
// NOT_SERVING, the safe one.
func serving(t *testing.T, got <-chan healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	for {
		if s := waitFor(t, got, "SERVING"); s == healthpb.HealthCheckResponse_SERVING {
			return
		}
	}
}

// The health service says NOT_SERVING the moment readiness is withdrawn — no poll,
// no timer: not one instant of virtual time passes — while the server still serves
// RPCs.
func TestHealthFollowsReadinessAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var st health.State
		st.Set(health.StatusReady)
		x := runInBubble(t, grpcentry.Config{}, &service{}, grpcentry.WithHealth(monitor(t, &st, health.MonitorConfig{})))
		ctx := ctxT(t)
		got, _ := x.watch(ctx)
		serving(t, got)
		start := time.Now()
		st.Set(health.StatusDraining) // the announcement: BeginDraining, or the stop
		if s := waitFor(t, got, "answer after the announcement"); s != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("answer %v, want NOT_SERVING", s)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("NOT_SERVING after %s of virtual time, want at once", d)
		}
		if r, err := x.health.Check(ctx, &healthpb.HealthCheckRequest{Service: "grpc.testing.TestService"}); err != nil ||
			r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("Check = %v, %v", r, err)
		}
		if _, err := x.client.EmptyCall(ctx, nil); err != nil {
			t.Errorf("RPC in the drain delay: %v, want served", err)
		}
	})
}

// A failing check makes the health service say NOT_SERVING, and SERVING again once
// it passes.
func TestHealthNotServingWhileDegraded(t *testing.T) {
	var st health.State
	st.Set(health.StatusReady)
	var down atomic.Bool
	check := health.CheckFunc(func(context.Context) error {
		if down.Load() {
			return errors.New("down")
		}
		return nil
	})
	m := monitor(t, &st, health.MonitorConfig{Checks: map[string]health.Check{"db": health.Gating(check)},
		CheckInterval: 20 * time.Millisecond, CheckTimeout: 10 * time.Millisecond})
	m.Start() // as the Host does: the checks run in the background, the answers follow
	t.Cleanup(m.Stop)
	x := run(t, grpcentry.Config{}, &service{}, grpcentry.WithHealth(m))
	got, _ := x.watch(ctxT(t))
	serving(t, got)
	down.Store(true)
	if s := waitFor(t, got, "answer while degraded"); s != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("answer %v, want NOT_SERVING", s)
	}
	down.Store(false)
	if s := waitFor(t, got, "answer once recovered"); s != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("answer %v, want SERVING", s)
	}
}

// An idle Watch stream does not hold the drain: it is ended at once with
// UNAVAILABLE and Drain returns at once, in virtual time (the default
// StreamDrainWindow is not waited out for it).
func TestIdleWatchDoesNotDelayDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := runInBubble(t, grpcentry.Config{}, &service{})
		got, end := x.watch(ctxT(t))
		if s := waitFor(t, got, "first answer"); s != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("first answer %v", s)
		}
		start := time.Now()
		if err := waitFor(t, x.drain(5*time.Second), "Drain"); err != nil {
			t.Fatalf("Drain = %v", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Drain took %s of virtual time with an idle Watch open, want at once", d)
		}
		// The stop before the drain already said NOT_SERVING; then the stream ends.
		if err := <-end; status.Code(err) != codes.Unavailable {
			t.Errorf("Watch ended with %v, want UNAVAILABLE", err)
		}
	})
}

// Without WithHealth the health service says SERVING while serving and
// NOT_SERVING from the Host's stop; unknown services are NOT_FOUND.
func TestHealthWithoutMonitor(t *testing.T) {
	x := run(t, grpcentry.Config{}, &service{})
	ctx := ctxT(t)
	r, err := x.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check = %v, %v", r, err)
	}
	if _, err := x.health.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("Check(nope) = %v, want NOT_FOUND", err)
	}
	x.endServe()
	r, err = x.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Check after stop = %v, %v", r, err)
	}
}

// List answers the whole server and each registered service; Watch on a service it
// does not know answers SERVICE_UNKNOWN and stays open until the drain.
func TestHealthListAndUnknownWatch(t *testing.T) {
	x := run(t, grpcentry.Config{}, &service{})
	ctx := ctxT(t)
	l, err := x.health.List(ctx, &healthpb.HealthListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "grpc.testing.TestService"} {
		if l.GetStatuses()[name].GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("List[%q] = %v", name, l.GetStatuses()[name])
		}
	}
	w, err := x.health.Watch(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVICE_UNKNOWN {
		t.Fatalf("Watch(nope) = %v, %v", r, err)
	}
	if err := waitFor(t, x.drain(5*time.Second), "Drain"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("Watch(nope) after the drain: %v, want UNAVAILABLE", err)
	}
}
