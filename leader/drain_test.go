package leader

import (
	"strings"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
)

func TestEntrypointLifecycle(t *testing.T) {
	t.Run("Serve returns at stop still leading; Drain ends the term and releases", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := lock.NewMemory()
			var g termLog
			r := startReplica(t, vSpec(mem, "a"), g.untilEnded)
			time.Sleep(vCE)
			r.stopServing()
			time.Sleep(10 * vRenew) // the drain delay: still leading, still renewing
			if !r.held() || len(g.all()) != 1 {
				t.Fatalf("held=%v terms=%v after Serve returned; want the term to go on", r.held(), g.all())
			}
			begin := time.Now()
			if err := r.l.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(begin); d != 0 {
				t.Fatalf("Drain took %v for a body that returns when told", d)
			}
			if h, _ := mem.Inspect(context.Background(), "job"); h.Held() {
				t.Fatalf("lease %+v still held after Drain", h)
			}
			if r.ended(reasonStopped) != 1 || r.gauge() != 0 || r.held() {
				t.Fatalf("stopped=%v gauge=%v held=%v", r.ended(reasonStopped), r.gauge(), r.held())
			}
			if err := r.l.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	})

	for _, c := range []struct {
		name     string
		lead     func(release <-chan struct{}) func(context.Context, *Term) error
		took     time.Duration
		released bool
	}{
		{"Drain cancels a body that ignores Ended after YieldGrace", func(<-chan struct{}) func(context.Context, *Term) error {
			return func(ctx context.Context, _ *Term) error { <-ctx.Done(); return ctx.Err() }
		}, vYield, true},
		{"a body that ignores cancellation keeps the lease until it lapses", func(release <-chan struct{}) func(context.Context, *Term) error {
			return func(context.Context, *Term) error { <-release; return nil }
		}, vYield + vRelease, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lock.NewMemory()
				release := make(chan struct{})
				defer close(release)
				r := startReplica(t, vSpec(mem, "a"), c.lead(release))
				synctest.Wait()
				r.stopServing()
				begin := time.Now()
				if err := r.l.Drain(context.Background()); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(begin); d != c.took {
					t.Fatalf("Drain took %v, want %v", d, c.took)
				}
				h, _ := mem.Inspect(context.Background(), "job")
				if h.Held() == c.released {
					t.Fatalf("after Drain the lease is %+v; want released=%v", h, c.released)
				}
				if !c.released {
					if n := r.logs.FilterMessageSnippet("did not return within ReleaseTimeout").Len(); n != 1 {
						t.Fatalf("%d logs about the body that did not return", n)
					}
				}
			})
		})
	}

	t.Run("Stop cancels at once, still releasing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := lock.NewMemory()
			r := startReplica(t, vSpec(mem, "a"), func(ctx context.Context, _ *Term) error { <-ctx.Done(); return nil })
			synctest.Wait()
			r.stopServing()
			begin := time.Now()
			if err := r.l.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(begin); d != 0 {
				t.Fatalf("Stop took %v", d)
			}
			if h, _ := mem.Inspect(context.Background(), "job"); h.Held() {
				t.Fatal("lease held after Stop")
			}
		})
	})

	t.Run("Serve whose ctx ends cuts everything and returns its error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := lock.NewMemory()
			l, err := New(vSpec(mem, "a"), func(ctx context.Context, _ *Term) error { <-ctx.Done(); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Bind(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*vCE)
			defer cancel()
			if err := l.Serve(ctx, make(chan struct{})); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Serve = %v", err)
			}
			if h, _ := mem.Inspect(context.Background(), "job"); h.Held() {
				t.Fatal("lease held after Serve gave up")
			}
			if err := l.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("Drain before Serve: nothing starts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spy := &spyLock{Lock: lock.NewMemory()}
			l, _ := New(vSpec(spy, "a"), noLead)
			if err := l.Bind(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := l.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := l.Serve(context.Background(), make(chan struct{})); err != nil {
				t.Fatalf("Serve after Drain = %v", err)
			}
			if err := l.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := len(spy.find("acquire", "", "", false)); n != 0 {
				t.Fatalf("%d acquires", n)
			}
		})
	})

	t.Run("calls out of turn are refused with entrypoint.ErrOutOfTurn", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, _ := New(vSpec(lock.NewMemory(), "a"), noLead)
			if err := l.Serve(context.Background(), make(chan struct{})); !errors.Is(err, entrypoint.ErrOutOfTurn) {
				t.Fatalf("Serve before Bind = %v", err)
			}
			if err := l.Bind(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := l.Bind(context.Background()); !errors.Is(err, entrypoint.ErrOutOfTurn) {
				t.Fatalf("second Bind = %v", err)
			}
			stop := make(chan struct{})
			served := make(chan error, 1)
			go func() { served <- l.Serve(context.Background(), stop) }()
			synctest.Wait()
			err := l.Serve(context.Background(), make(chan struct{}))
			if !errors.Is(err, entrypoint.ErrOutOfTurn) || !strings.Contains(err.Error(), `entrypoint "leadership:job": Serve called while serving`) {
				t.Fatalf("second Serve = %v", err)
			}
			close(stop)
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			if err := l.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("Drain during an acquire abandons it and releases what it lands", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := lock.NewMemory()
			spy := &spyLock{Lock: mem, acquire: func(context.Context, string, string) (error, bool) {
				time.Sleep(vCE / 2)
				return nil, false
			}}
			var g termLog
			r := startReplica(t, vSpec(spy, "a"), g.untilEnded, WithTelemetry(entrypoint.Telemetry{Logger: zap.NewNop()}))
			time.Sleep(vCE / 4)
			r.stopServing()
			begin := time.Now()
			if err := r.l.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(begin); d > vCE/4 {
				t.Fatalf("Drain took %v", d)
			}
			synctest.Wait()
			time.Sleep(vCE)
			if len(g.all()) != 0 {
				t.Fatal("a term started after Drain")
			}
			if h, _ := mem.Inspect(context.Background(), "job"); h.Held() || h.Fence != 1 {
				t.Fatalf("lock %+v; want the late acquire landed and released", h)
			}
		})
	})
}
