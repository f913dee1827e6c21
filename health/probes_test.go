package health_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/servicewright/servicewright/health"
)

func TestLivenessIsAlwaysOK(t *testing.T) {
	for _, st := range []health.Status{health.StatusUnavailable, health.StatusReady, health.StatusDraining} {
		a := get(t, health.Liveness(), "/livez")
		if a.code != 200 || a.body != `{"status":"ok"}`+"\n" {
			t.Fatalf("%v: got %d %s", st, a.code, a.body)
		}
	}
}

// statusOnly is a Source without Started: the handler must remember what it saw.
type statusOnly struct{ s *health.State }

func (s statusOnly) Status() health.Status { return s.s.Status() }

func TestStartup(t *testing.T) {
	t.Run("503 until ready, then 200 for good", func(t *testing.T) {
		var s health.State
		h := health.Startup(&s)
		if a := get(t, h, "/startupz"); a.code != 503 || a.answer.Status != "unavailable" {
			t.Fatalf("before ready: %d %s", a.code, a.body)
		}
		s.Set(health.StatusReady)
		if a := get(t, h, "/startupz"); a.code != 200 || a.body != `{"status":"ok"}`+"\n" {
			t.Fatalf("ready: %d %s", a.code, a.body)
		}
		s.Set(health.StatusDraining)
		if a := get(t, h, "/startupz"); a.code != 200 {
			t.Fatalf("draining: %d %s", a.code, a.body)
		}
	})
	t.Run("a Ready phase no probe saw still counts", func(t *testing.T) {
		var s health.State
		h := health.Startup(&s)
		s.Set(health.StatusReady)
		s.Set(health.StatusUnavailable)
		if a := get(t, h, "/startupz"); a.code != 200 {
			t.Fatalf("got %d %s", a.code, a.body)
		}
	})
	t.Run("source without Started remembers", func(t *testing.T) {
		var s health.State
		h := health.Startup(statusOnly{&s})
		s.Set(health.StatusReady)
		get(t, h, "/startupz")
		s.Set(health.StatusUnavailable)
		if a := get(t, h, "/startupz"); a.code != 200 {
			t.Fatalf("got %d %s", a.code, a.body)
		}
	})
	t.Run("draining before ready is started", func(t *testing.T) {
		var s health.State
		s.Set(health.StatusDraining)
		if a := get(t, health.Startup(&s), "/startupz"); a.code != 200 {
			t.Fatalf("got %d %s", a.code, a.body)
		}
	})
	t.Run("panicking source is 503", func(t *testing.T) {
		h := health.Startup(health.FromFunc(func() *health.State { panic("x") }))
		if a := get(t, h, "/startupz"); a.code != 503 {
			t.Fatalf("got %d %s", a.code, a.body)
		}
	})
}

func TestStateDrainingIsFinalAndStartedSticks(t *testing.T) {
	var s health.State
	if s.Status() != health.StatusUnavailable || s.Started() {
		t.Fatal("zero State must be Unavailable and not started")
	}
	s.Set(health.StatusReady)
	s.Set(health.StatusDraining)
	s.Set(health.StatusReady)
	if s.Status() != health.StatusDraining || !s.Started() || s.Status().String() != "draining" {
		t.Fatalf("status %v started %v", s.Status(), s.Started())
	}
}

func TestErrorType(t *testing.T) {
	op := &net.OpError{Op: "dial", Err: errors.New("refused")}
	type custom struct{ error }
	for _, tc := range []struct {
		err  error
		want string
	}{
		{op, "*net.OpError"},
		{fmt.Errorf("redis: %w", op), "*net.OpError"},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", op)), "*net.OpError"},
		{fmt.Errorf("two: %w %w", op, errors.New("x")), "*net.OpError"},
		{errors.Join(nil, op, errors.New("x")), "*net.OpError"},
		{errors.New("plain"), "*errors.errorString"},
		{fmt.Errorf("no wrap %v", op), "*errors.errorString"},
		{custom{op}, "health_test.custom"},
		{context.DeadlineExceeded, "context.deadlineExceededError"},
	} {
		if got := health.ErrorType(tc.err); got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
