package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/host"
)

// TestWarmupNamesItsBackend: a warmup step whose backend accepts and never answers
// is named with its backend within WarmupWaitLogAfter, then again at a backoff until
// the budget is spent, and the startup error names the backend too; a URL given as
// the backend loses its credentials. Before, the log said nothing until the budget
// was spent, and then named the step alone.
func TestWarmupNamesItsBackend(t *testing.T) {
	for _, tc := range []struct{ backend, want string }{
		{"postgres db.internal:5432", "postgres db.internal:5432"},
		{"postgres://orders:s3cret@db.internal:5432/orders?password=s3cret", "postgres db.internal:5432"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				core, logs := observer.New(zap.InfoLevel)
				j := &journal{}
				began := time.Now()
				spec := host.AppSpec{
					Entrypoints: []host.Registration{{Entrypoint: newFake("http", j)}},
					Warmups: []host.Step{{Name: "schema", Backend: tc.backend, Start: func(ctx context.Context) error {
						<-ctx.Done()
						return ctx.Err()
					}}},
					Budgets:   host.Budgets{WarmupTimeout: time.Minute},
					Telemetry: host.TelemetryConfig{Logger: zap.New(core)},
				}
				err := start(t, j, spec).Wait()
				if !errors.Is(err, host.ErrWarmupTimeout) || !strings.Contains(err.Error(), "waiting on "+tc.want) {
					t.Fatalf("Run = %v, want the warmup timeout naming %s", err, tc.want)
				}
				waits := logs.FilterMessage("warmup step has not answered yet; still waiting").FilterField(zap.String("step", "schema")).All()
				if len(waits) < 4 || len(waits) > 8 {
					t.Fatalf("%d waiting lines in a minute, want one within %s and then at a doubling backoff", len(waits), 2*time.Second)
				}
				if first := waits[0].Time.Sub(began); first > 2*time.Second {
					t.Errorf("first waiting line after %s, want within %s", first, 2*time.Second)
				}
				for _, w := range waits {
					if w.ContextMap()["backend"] != tc.want {
						t.Errorf("waiting line %v, want backend %q", w.ContextMap(), tc.want)
					}
				}
				for _, e := range logs.All() {
					if strings.Contains(fmt.Sprint(e.Message, e.ContextMap()), "s3cret") {
						t.Errorf("a credential reached the log: %v", e)
					}
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("a credential reached the error: %v", err)
				}
			})
		})
	}
}
