package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

type probeAnswer struct {
	code int
	body map[string]any
	raw  string
}

func get(t *testing.T, url string) (probeAnswer, error) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return probeAnswer{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := probeAnswer{code: resp.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a, nil
}

func mustGet(t *testing.T, url string) probeAnswer {
	t.Helper()
	a, err := get(t, url)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestProbes(t *testing.T) {
	t.Run("readiness follows the lifecycle and liveness stays up through the drain", func(t *testing.T) {
		p, probe := startExample(t, "EXAMPLE_WARMUP_DELAY=1s", "SW_DRAIN_DELAY=1s")
		base := "http://" + probe
		mustLog(t, p, stage("warmup"), 20*time.Second)
		mustLog(t, p, map[string]string{"msg": "probe listener open"}, time.Second)
		if a := mustGet(t, base+"/readyz"); a.code != 503 || a.body["status"] != "unavailable" {
			t.Errorf("/readyz during warmup = %d %s", a.code, a.raw)
		}
		if a := mustGet(t, base+"/startupz"); a.code != 503 {
			t.Errorf("/startupz during warmup = %d", a.code)
		}
		if lc := mustGet(t, base+"/debug/lifecycle"); lc.body["stage"] != "warmup" {
			t.Errorf("/debug/lifecycle during warmup: %s", lc.raw)
		}
		mustLog(t, p, stage("serve"), 20*time.Second)
		if a := mustGet(t, base+"/readyz"); a.code != 200 || a.body["status"] != "ok" {
			t.Errorf("/readyz when serving = %d %s", a.code, a.raw)
		}
		if lc := mustGet(t, base+"/debug/lifecycle"); lc.body["stage"] != "serve" || lc.body["ready"] != true {
			t.Errorf("/debug/lifecycle when serving: %s", lc.raw)
		}
		m := mustGet(t, base+"/metrics")
		for _, name := range []string{"servicewright_lifecycle_stage{stage=\"serve\"} 1", "servicewright_ready 1",
			"servicewright_lifecycle_stage_duration_seconds{stage=\"warmup\"}"} {
			if !strings.Contains(m.raw, name) {
				t.Errorf("/metrics lacks %s", name)
			}
		}

		sent := time.Now()
		_ = p.Signal(syscall.SIGTERM)
		var drainingAfter time.Duration
		for {
			a := mustGet(t, base+"/readyz")
			if a.code == 503 && a.body["status"] == "draining" {
				drainingAfter = time.Since(sent)
				break
			}
			if time.Since(sent) > 10*time.Second {
				t.Fatalf("/readyz still %d %s 10s after SIGTERM", a.code, a.raw)
			}
		}
		// A sanity bound, 100 times the few milliseconds it takes: the drain delay
		// that follows is several seconds, and readiness must turn before it, not after.
		if drainingAfter > 2*time.Second {
			t.Errorf("/readyz turned draining %s after SIGTERM, want at once (within 2s)", drainingAfter)
		}
		if a := mustGet(t, base+"/livez"); a.code != 200 {
			t.Errorf("/livez while draining = %d", a.code)
		}
		if a := mustGet(t, base+"/startupz"); a.code != 200 {
			t.Errorf("/startupz while draining = %d", a.code)
		}
		if lc := mustGet(t, base+"/debug/lifecycle"); lc.body["draining"] != true {
			t.Errorf("/debug/lifecycle while draining: %s", lc.raw)
		}
		// The listener answers until cleanup is over: it is still up at pre_shutdown.
		mustLog(t, p, stage("post_shutdown"), 10*time.Second)
		if code := exitCode(t, p); code != 0 {
			t.Fatalf("exit %d", code)
		}
		t.Logf("readiness draining %s after SIGTERM", drainingAfter)
	})

	t.Run("real backends are checked by name and a dead one degrades readiness", func(t *testing.T) {
		r, pg := env.Redis(t), env.Postgres(t)
		p, probe := startExample(t, "REDIS_URL="+r.URL(), "DATABASE_URL="+pg.DSN())
		mustLog(t, p, stage("serve"), 20*time.Second)
		a := mustGet(t, "http://"+probe+"/readyz")
		checks, _ := a.body["checks"].(map[string]any)
		if a.code != 200 || checks["redis"] == nil || checks["postgres"] == nil {
			t.Fatalf("/readyz = %d %s", a.code, a.raw)
		}
		if err := r.Kill(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Restart() })
		a = readyzUntil(t, probe, "degraded", 15*time.Second)
		// Redis is shared by every replica: degraded, named, still in rotation.
		checks, _ = a.body["checks"].(map[string]any)
		if c, _ := checks["redis"].(map[string]any); a.code != 200 || a.body["status"] != "degraded" ||
			c["ok"] != false || strings.Contains(a.raw, r.URL()) {
			t.Errorf("/readyz with Redis down = %d %s, want 200 degraded naming redis", a.code, a.raw)
		}
		if err := r.Restart(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for a = mustGet(t, "http://"+probe+"/readyz"); a.body["status"] != "ok" && time.Now().Before(deadline); a = mustGet(t, "http://"+probe+"/readyz") {
		}
		if a.code != 200 || a.body["status"] != "ok" {
			t.Errorf("/readyz after Redis returned = %d %s", a.code, a.raw)
		}
		_ = p.Signal(syscall.SIGTERM)
		if code := exitCode(t, p); code != 0 {
			t.Errorf("exit %d", code)
		}
	})

	t.Run("a probe address that cannot be bound is a startup error naming it, exit 1", func(t *testing.T) {
		taken, probe := startExample(t)
		mustLog(t, taken, stage("serve"), 20*time.Second)
		p, _ := startExample(t, "PROBE_ADDR="+probe)
		if code := exitCode(t, p); code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		if !strings.Contains(strings.Join(p.Lines(), "\n"), probe) {
			t.Error("the error does not name the address")
		}
		_ = taken.Signal(syscall.SIGTERM)
		_, _ = taken.Wait(10 * time.Second)
	})

	t.Run("a malformed TERMINATION_GRACE_PERIOD or REDIS_URL exits 78", func(t *testing.T) {
		for _, kv := range []string{"TERMINATION_GRACE_PERIOD=thirty", "REDIS_URL=http://nope"} {
			p, _ := startExample(t, kv)
			if code := exitCode(t, p); code != 78 {
				t.Errorf("%s: exit %d, want 78", kv, code)
			}
			name := strings.SplitN(kv, "=", 2)[0]
			if !strings.Contains(strings.Join(p.Lines(), "\n"), name) {
				t.Errorf("%s: the error does not name %s", kv, name)
			}
		}
	})
}
