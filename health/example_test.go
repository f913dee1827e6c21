package health_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/servicewright/servicewright/health"
)

func ExampleNewReadiness() {
	var state health.State
	readyz, err := health.NewReadiness(health.ReadinessConfig{
		Checks: map[string]health.Check{
			// This replica's own spool directory: its failure withdraws readiness.
			"spool": health.Gating(health.CheckFunc(func(context.Context) error { return nil })),
			// The database every replica shares: its failure only degrades.
			"db": health.CheckFunc(func(context.Context) error {
				return fmt.Errorf("connect postgres://app:secret@db/orders: %w", errors.ErrUnsupported)
			}),
		},
	}, &state)
	if err != nil {
		panic(err)
	}
	probe := func() {
		rec := httptest.NewRecorder()
		readyz.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		fmt.Print(rec.Code, " ", rec.Body)
	}
	probe()
	state.Set(health.Ready)
	probe()
	state.Set(health.Draining)
	probe()
	// Output:
	// 503 {"status":"unavailable","checks":{}}
	// 200 {"status":"degraded","checks":{"db":{"ok":false,"detail":"*errors.errorString"},"spool":{"ok":true,"detail":"ok","gates":true}}}
	// 503 {"status":"draining","checks":{}}
}

func ExampleListener() {
	var state health.State
	l, err := health.NewListener(health.ListenerConfig{Addr: "127.0.0.1:0"}, &state, health.ListenerOptions{})
	if err != nil {
		panic(err)
	}
	if err := l.Start(); err != nil { // at bootstrap, before warmup
		panic(err)
	}
	defer l.Close(context.Background()) // last, after cleanup

	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, path := range []string{"/livez", "/startupz", "/readyz"} {
		resp, err := c.Get("http://" + l.Addr().String() + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(path, " ", resp.StatusCode, " ", string(body))
	}
	// Output:
	// /livez 200 {"status":"ok"}
	// /startupz 503 {"status":"unavailable"}
	// /readyz 503 {"status":"unavailable","checks":{}}
}
