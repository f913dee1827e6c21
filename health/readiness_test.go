package health_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/rediskit"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

func ok(context.Context) error { return nil }

func TestReadinessAnswersFromStateAlone(t *testing.T) {
	var ran atomic.Int32
	count := health.CheckFunc(func(context.Context) error { ran.Add(1); return nil })
	for _, tc := range []struct {
		name   string
		set    []health.Status
		code   int
		status string
	}{
		{"unavailable before ready", nil, 503, "unavailable"},
		{"draining after ready", []health.Status{health.StatusReady, health.StatusDraining}, 503, "draining"},
		{"draining without ever being ready", []health.Status{health.StatusDraining}, 503, "draining"},
		{"draining is final", []health.Status{health.StatusDraining, health.StatusReady}, 503, "draining"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s health.State
			for _, st := range tc.set {
				s.Set(st)
			}
			h := newReadiness(t, &s, health.ReadinessConfig{Checks: map[string]health.Check{"db": count}})
			a := get(t, h, "/readyz")
			if a.code != tc.code || a.answer.Status != tc.status {
				t.Fatalf("got %d %q, want %d %q", a.code, a.answer.Status, tc.code, tc.status)
			}
			if want := `{"status":"` + tc.status + `","checks":{}}` + "\n"; a.body != want {
				t.Fatalf("body %q, want %q", a.body, want)
			}
		})
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("checks ran %d times while not Ready", n)
	}
}

func TestReadinessReadyWithoutChecksIsOK(t *testing.T) {
	a := get(t, newReadiness(t, ready(), health.ReadinessConfig{}), "/readyz")
	if a.code != 200 || a.body != `{"status":"ok","checks":{}}`+"\n" {
		t.Fatalf("got %d %q", a.code, a.body)
	}
}

func TestReadinessAllChecksPass(t *testing.T) {
	h := newReadiness(t, ready(), health.ReadinessConfig{Checks: map[string]health.Check{
		"redis": health.CheckFunc(ok), "postgres": health.CheckFunc(ok),
	}})
	a := get(t, h, "/readyz")
	want := `{"status":"ok","checks":{"postgres":{"ok":true,"detail":"ok"},"redis":{"ok":true,"detail":"ok"}}}` + "\n"
	if a.code != 200 || a.body != want {
		t.Fatalf("got %d %s, want 200 %s", a.code, a.body, want)
	}
	if ct, cc := a.header.Get("Content-Type"), a.header.Get("Cache-Control"); ct != "application/json" || cc != "no-store" {
		t.Fatalf("Content-Type %q, Cache-Control %q", ct, cc)
	}
}

func TestReadinessFailingCheckShowsTypeNeverMessage(t *testing.T) {
	const secret = "hunter2-s3cret"
	leaky := health.CheckFunc(func(context.Context) error {
		op := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused by postgres://app:" + secret + "@db")}
		return fmt.Errorf("connect postgres://app:%s@db:5432/orders: %w", secret, op)
	})
	logger, logs := observed()
	h := newReadiness(t, ready(), health.ReadinessConfig{
		Checks: map[string]health.Check{"postgres": leaky, "redis": health.CheckFunc(ok)},
		Logger: logger,
	})
	a := get(t, h, "/readyz")
	if a.code != 200 || a.answer.Status != "degraded" {
		t.Fatalf("got %d %q, want 200 degraded", a.code, a.answer.Status)
	}
	if got := a.answer.Checks["postgres"]; got != (health.CheckResult{OK: false, Detail: "*net.OpError"}) {
		t.Fatalf("postgres entry %+v", got)
	}
	if got := a.answer.Checks["redis"]; !got.OK {
		t.Fatalf("redis entry %+v: a failing sibling must not taint it", got)
	}
	if strings.Contains(a.body, secret) {
		t.Fatalf("body leaks the password: %s", a.body)
	}
	if logs.FilterMessage("readiness check failed").FilterFieldKey("error").Len() != 1 {
		t.Fatalf("the failure (with its message) should be logged once: %v", logs.All())
	}
}

func TestReadinessHangingCheckIsOneTimedOutEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cancelledAfter atomic.Int64
		start := time.Now()
		h := newReadiness(t, ready(), health.ReadinessConfig{
			CheckTimeout: 2 * time.Second,
			Checks: map[string]health.Check{
				// Ignores its ctx for an hour: the answer must not wait for it.
				"stuck": health.CheckFunc(func(context.Context) error { time.Sleep(time.Hour); return nil }),
				// Honours its ctx: records when it was cancelled.
				"slow": health.CheckFunc(func(ctx context.Context) error {
					<-ctx.Done()
					cancelledAfter.Store(int64(time.Since(start)))
					return ctx.Err()
				}),
				"fine": health.CheckFunc(ok),
			},
		})
		a := get(t, h, "/readyz")
		if elapsed := time.Since(start); elapsed != 2*time.Second {
			t.Fatalf("answered after %v, want exactly the 2s CheckTimeout", elapsed)
		}
		want := `{"status":"degraded","checks":{"fine":{"ok":true,"detail":"ok"},` +
			`"slow":{"ok":false,"detail":"timed out after 2s"},"stuck":{"ok":false,"detail":"timed out after 2s"}}}` + "\n"
		if a.code != 200 || a.body != want {
			t.Fatalf("got %d %s, want 200 %s", a.code, a.body, want)
		}
		synctest.Wait()
		if got := time.Duration(cancelledAfter.Load()); got != 2*time.Second {
			t.Fatalf("check's ctx cancelled after %v, want at its 2s timeout", got)
		}
		// The abandoned goroutine still ends, on its own, once its hour has passed.
		time.Sleep(time.Hour)
		synctest.Wait()
	})
}

func TestReadinessTimeoutIsPerCheckNotPerSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sleep := func(d time.Duration) health.Check {
			return health.CheckFunc(func(ctx context.Context) error {
				select {
				case <-time.After(d):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		}
		h := newReadiness(t, ready(), health.ReadinessConfig{
			CheckTimeout: time.Second,
			Checks:       map[string]health.Check{"a": sleep(900 * time.Millisecond), "b": sleep(900 * time.Millisecond), "c": sleep(900 * time.Millisecond)},
		})
		start := time.Now()
		a := get(t, h, "/readyz")
		if a.code != 200 {
			t.Fatalf("got %d %s: each check fits its own 1s budget", a.code, a.body)
		}
		if elapsed := time.Since(start); elapsed != 900*time.Millisecond {
			t.Fatalf("answered after %v, want 900ms (concurrent)", elapsed)
		}
	})
}

func TestReadinessDefaultTimeoutIsTwoSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newReadiness(t, ready(), health.ReadinessConfig{Checks: map[string]health.Check{
			"wait": health.CheckFunc(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }),
		}})
		start := time.Now()
		a := get(t, h, "/readyz")
		if d := time.Since(start); d != 2*time.Second || a.answer.Checks["wait"].Detail != "timed out after 2s" {
			t.Fatalf("after %v: %s", d, a.body)
		}
	})
}

func TestReadinessProberGoneCancelsChecks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newReadiness(t, ready(), health.ReadinessConfig{Checks: map[string]health.Check{
			"wait": health.CheckFunc(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }),
		}})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		rec := newRecorder()
		start := time.Now()
		h.ServeHTTP(rec, newRequest(ctx, "/readyz"))
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Fatalf("answered after %v, want when the request ended (100ms)", d)
		}
		if !strings.Contains(rec.Body.String(), `"detail":"canceled"`) {
			t.Fatalf("body %s", rec.Body)
		}
	})
}

func TestReadinessPanickingCheckIsReportedAndLogged(t *testing.T) {
	logger, logs := observed()
	h := newReadiness(t, ready(), health.ReadinessConfig{
		Logger: logger,
		Checks: map[string]health.Check{
			"boom": health.CheckFunc(func(context.Context) error { panic("secret-in-panic") }),
			"fine": health.CheckFunc(ok),
		},
	})
	a := get(t, h, "/readyz")
	if a.code != 200 || a.answer.Checks["boom"] != (health.CheckResult{Detail: "panic"}) || !a.answer.Checks["fine"].OK {
		t.Fatalf("got %d %s", a.code, a.body)
	}
	if strings.Contains(a.body, "secret-in-panic") {
		t.Fatalf("panic value served: %s", a.body)
	}
	if logs.FilterMessage("readiness check panicked").FilterFieldKey("stack").Len() != 1 {
		t.Fatalf("panic not logged with its stack: %v", logs.All())
	}
}

func TestReadinessExclude(t *testing.T) {
	failing := health.CheckFunc(func(context.Context) error { return errors.New("down") })
	h := newReadiness(t, ready(), health.ReadinessConfig{Checks: map[string]health.Check{
		"kafka": failing, "redis": health.CheckFunc(ok), "postgres": health.CheckFunc(ok),
	}})
	t.Run("skips the named checks", func(t *testing.T) {
		for _, q := range []string{"?exclude=kafka", "?exclude=kafka,postgres", "?exclude=kafka&exclude=postgres", "?exclude=%20kafka%20,,"} {
			a := get(t, h, "/readyz"+q)
			if _, has := a.answer.Checks["kafka"]; a.code != 200 || has || !a.answer.Checks["redis"].OK {
				t.Fatalf("%s: got %d %s", q, a.code, a.body)
			}
		}
	})
	t.Run("unknown name answers 400 naming it", func(t *testing.T) {
		a := get(t, h, "/readyz?exclude=kafka,mongo,ldap")
		if a.code != 400 || !strings.Contains(a.body, `"error":"unknown check in exclude: mongo, ldap"`) {
			t.Fatalf("got %d %s", a.code, a.body)
		}
	})
}

func TestNewReadinessRefusesBadOptions(t *testing.T) {
	var nilFunc health.CheckFunc
	_, err := health.NewReadiness(health.ReadinessConfig{
		CheckTimeout: -time.Second,
		Checks: map[string]health.Check{
			"":      health.CheckFunc(ok),
			"a,b":   health.CheckFunc(ok),
			" pad":  health.CheckFunc(ok),
			"nil":   nil,
			"typed": nilFunc,
			"redis": rediskit.Check(nil),
			"good":  health.CheckFunc(ok),
		},
	}, nil)
	ce, isConfig := errors.AsType[*fault.ConfigError](err)
	if !isConfig {
		t.Fatalf("err = %v (%T), want *fault.ConfigError", err, err)
	}
	var fields []string
	for _, p := range ce.Problems {
		fields = append(fields, p.Field)
	}
	want := []string{"Source", "CheckTimeout", `Checks[""]`, `Checks[" pad"]`, `Checks["a,b"]`, `Checks["nil"]`, `Checks["redis"]`, `Checks["typed"]`}
	if strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Fatalf("fields %q, want %q (%v)", fields, want, err)
	}
	if !strings.Contains(err.Error(), "CheckTimeout: must be positive, got -1s") {
		t.Fatalf("message %q", err)
	}
}

func TestFromFunc(t *testing.T) {
	logger, logs := observed()
	for _, tc := range []struct {
		name   string
		src    health.Source
		code   int
		status string
	}{
		{"nil state is unavailable", health.FromFunc(func() *health.State { return nil }), 503, "unavailable"},
		{"panic is unavailable", health.FromFunc(func() *health.State { panic("runtime not built: dsn=secret") }), 503, "unavailable"},
		{"state is followed", health.FromFunc(ready), 200, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newReadiness(t, tc.src, health.ReadinessConfig{Logger: logger})
			a := get(t, h, "/readyz")
			if a.code != tc.code || a.answer.Status != tc.status || strings.Contains(a.body, "secret") {
				t.Fatalf("got %d %s", a.code, a.body)
			}
		})
	}
	if logs.FilterMessage("health source panicked; answering unavailable").Len() != 1 {
		t.Fatalf("panic not logged once: %v", logs.All())
	}
	if _, err := health.NewReadiness(health.ReadinessConfig{}, health.FromFunc(nil)); err == nil {
		t.Fatal("FromFunc(nil) accepted: a nil func is a wiring mistake, refused at build")
	}
}
