package health_test

import (
	"context"
	"errors"
	"fmt"
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
	state.Set(health.StatusReady)
	probe()
	state.Set(health.StatusDraining)
	probe()
	// Output:
	// 503 {"status":"unavailable","checks":{}}
	// 200 {"status":"degraded","checks":{"db":{"ok":false,"detail":"*errors.errorString"},"spool":{"ok":true,"detail":"ok","gates":true}}}
	// 503 {"status":"draining","checks":{}}
}

func ExampleMonitor_ServeHTTP() {
	var state health.State
	m, err := health.NewMonitor(health.MonitorConfig{}, &state)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/readyz", m) // the same verdicts as m.Evaluate and m.Subscribe
	mux.Handle("/livez", health.Liveness())
	mux.Handle("/startupz", health.Startup(&state))

	for _, path := range []string{"/livez", "/startupz", "/readyz"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		fmt.Print(path, " ", rec.Code, " ", rec.Body)
	}
	// Output:
	// /livez 200 {"status":"ok"}
	// /startupz 503 {"status":"unavailable"}
	// /readyz 503 {"status":"unavailable","checks":{}}
}
