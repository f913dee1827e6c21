package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
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
	h, err := health.NewReadiness(health.ReadinessConfig{CheckTimeout: timeout, Checks: map[string]health.Check{
		"redis":    health.CheckFunc(ok),
		"postgres": health.CheckFunc(ok),
		"kafka": health.CheckFunc(func(ctx context.Context) error {
			<-ctx.Done()
			time.Sleep(5 * time.Millisecond) // a driver slow to notice cancellation
			return ctx.Err()
		}),
	}}, ready())
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	var worst time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		worst = max(worst, time.Since(start))
		if rec.Code != http.StatusServiceUnavailable {
			b.Fatalf("got %d %s", rec.Code, rec.Body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed()-time.Duration(b.N)*timeout)/float64(b.N)/1e6, "over-ms/op")
	b.ReportMetric(float64(worst-timeout)/1e6, "worst-over-ms")
	time.Sleep(10 * time.Millisecond) // let the last abandoned check finish before goleak
}
