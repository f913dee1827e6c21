package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servicewright/servicewright/health"
)

func benchReadiness(b *testing.B, timeout time.Duration, checks map[string]health.Check) {
	h, err := health.NewReadiness(health.ReadinessConfig{CheckTimeout: timeout, Checks: checks}, ready())
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
	}
}

// BenchmarkReadinessHealthy is the baseline: three in-memory checks that pass.
func BenchmarkReadinessHealthy(b *testing.B) {
	benchReadiness(b, time.Second, map[string]health.Check{
		"redis": health.CheckFunc(ok), "postgres": health.CheckFunc(ok), "kafka": health.CheckFunc(ok),
	})
}

// BenchmarkReadinessHanging measures the answer with one dependency hanging (it ignores
// its ctx for a while longer than the timeout) against CheckTimeout = 20ms. ns/op is
// the answer's latency; over-ms/op is how far past CheckTimeout it came (the design
// target is ≤ 20ms).
func BenchmarkReadinessHanging(b *testing.B) {
	const timeout = 20 * time.Millisecond
	var finished atomic.Int64
	ended := make(chan struct{}, 1)
	h, err := health.NewReadiness(health.ReadinessConfig{CheckTimeout: timeout, Checks: map[string]health.Check{
		"redis":    health.CheckFunc(ok),
		"postgres": health.CheckFunc(ok),
		"kafka": health.CheckFunc(func(ctx context.Context) error {
			defer func() { // counted, so that the end waits for the last abandoned one
				finished.Add(1)
				select {
				case ended <- struct{}{}:
				default:
				}
			}()
			<-ctx.Done()
			time.Sleep(5 * time.Millisecond) // a driver slow to notice cancellation: the figure's subject
			return ctx.Err()
		}),
	}}, ready())
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	var worst time.Duration
	var probes int64 // each runs the kafka check once
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		probes++
		worst = max(worst, time.Since(start))
		if rec.Code != http.StatusOK { // degraded: kafka does not gate
			b.Fatalf("got %d %s", rec.Code, rec.Body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed()-time.Duration(b.N)*timeout)/float64(b.N)/1e6, "over-ms/op")
	b.ReportMetric(float64(worst-timeout)/1e6, "worst-over-ms")
	for finished.Load() < probes { // the abandoned checks end before goleak looks
		<-ended
	}
}

// BenchmarkReadinessFromState measures /readyz on a started Monitor while one
// dependency is hung (its check never returns until the end): the answer is read from
// the last results, so ns/op is the probe's whole cost; worst-us is the slowest
// answer. Compare BenchmarkReadinessHanging, where the probe runs the checks.
func BenchmarkReadinessFromState(b *testing.B) {
	release := make(chan struct{})
	m, err := health.NewMonitor(health.MonitorConfig{CheckTimeout: 20 * time.Millisecond, CheckInterval: time.Second,
		Checks: map[string]health.Check{
			"redis":    health.CheckFunc(ok),
			"postgres": health.CheckFunc(ok),
			"kafka": health.CheckFunc(func(ctx context.Context) error {
				<-release // frozen: ignores its ctx
				return ctx.Err()
			}),
		}}, ready())
	if err != nil {
		b.Fatal(err)
	}
	m.Start()
	defer func() {
		close(release)
		m.Stop()
	}()
	if err := m.AwaitFirst(b.Context()); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	var worst time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		worst = max(worst, time.Since(start))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "timed out after 20ms") {
			b.Fatalf("got %d %s, want 200 degraded with kafka timed out", rec.Code, rec.Body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(worst)/1e3, "worst-us")
}
