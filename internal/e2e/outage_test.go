package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pausedMetric matches a servicewright_kafka_paused series above 0: the gauge is
// there at 0 whenever the consumer runs.
var pausedMetric = regexp.MustCompile(`(?m)^servicewright_kafka_paused\{[^}]*\} [1-9]`)

// TestStoreOutage stops the example's PostgreSQL for several seconds while orders
// keep arriving: the consumer pauses instead of dead-lettering them, shows it in
// /debug/lifecycle, /readyz and /metrics, and stores every order exactly once after
// the database is back.
func TestStoreOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("stops the package's PostgreSQL")
	}
	pg := env.Postgres(t)
	db := freshDatabase(t, pg.DSN(), "store_outage")
	httpAddr := freeAddr(t)
	p, probe := startExample(t, "HTTP_ADDR="+httpAddr, "DATABASE_URL="+db.dsn)
	mustLog(t, p, stage("serve"), 20*time.Second)
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(id string) {
		t.Helper()
		resp, err := client.Post("http://"+httpAddr+"/orders", "application/json",
			bytes.NewBufferString(fmt.Sprintf(`{"id":%q,"item":"tea","qty":1}`, id)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST /orders %s: %d, want 202", id, resp.StatusCode)
		}
	}
	// stored waits until every order of ids is stored and returns their deliveries.
	stored := func(ids []string, timeout time.Duration) map[string]int {
		t.Helper()
		deadline := time.Now().Add(timeout)
		out := map[string]int{}
		for _, id := range ids {
			for {
				code, body := get("http://" + httpAddr + "/orders/" + id)
				if code == http.StatusOK {
					var o order
					if err := json.Unmarshal([]byte(body), &o); err != nil {
						t.Fatal(err)
					}
					out[id] = o.Deliveries
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("order %s not stored within %v: %d %s", id, timeout, code, body)
				}
				time.Sleep(50 * time.Millisecond) // polling the store, not synchronising
			}
		}
		return out
	}
	consumerDetail := func() string {
		_, body := get("http://" + probe + "/debug/lifecycle")
		var l struct {
			Entrypoints []struct{ Name, Detail string }
		}
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatal(err)
		}
		for _, e := range l.Entrypoints {
			if e.Name == "orders-consumer" {
				return e.Detail
			}
		}
		t.Fatalf("no orders-consumer in /debug/lifecycle: %s", body)
		return ""
	}

	var ids []string
	for i := range 5 {
		ids = append(ids, fmt.Sprintf("before-%d", i))
		post(ids[i])
	}
	stored(ids, 20*time.Second)

	if err := pg.Shutdown(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Restart() }) // for the package's next tests, if this one fails midway
	for i := range 10 {
		id := fmt.Sprintf("during-%d", i)
		ids = append(ids, id)
		post(id)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.HasPrefix(consumerDetail(), "paused: ") {
		if time.Now().After(deadline) {
			t.Fatal("/debug/lifecycle never showed the consumer paused")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("during the outage: %s", consumerDetail())
	// PostgreSQL is shared by every replica: its outage degrades readiness, named,
	// and keeps the replica in rotation (health.Gating's rule).
	readyzUntil(t, probe, "degraded", 15*time.Second) // the check's next run
	if code, body := get("http://" + probe + "/readyz"); code != http.StatusOK || !strings.Contains(body, `"status":"degraded"`) ||
		!strings.Contains(body, `"postgres":{"ok":false`) {
		t.Errorf("/readyz during the outage: %d %s, want 200 degraded naming postgres", code, body)
	}
	time.Sleep(3 * time.Second) // the outage itself
	_, metrics := get("http://" + probe + "/metrics")
	if !pausedMetric.MatchString(metrics) {
		t.Error("/metrics has no servicewright_kafka_paused series above 0 during the outage")
	}
	if !strings.Contains(metrics, `servicewright_kafka_messages_dead_lettered_total{entrypoint="orders-consumer",topic="orders"} 0`) {
		t.Error("an order was dead-lettered during the outage (or the counter is missing)")
	}

	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	got := stored(ids, 20*time.Second)
	t.Logf("every order stored %v after PostgreSQL came back", time.Since(back))
	for id, n := range got {
		if n != 1 {
			t.Errorf("order %s stored %d times, want once", id, n)
		}
	}
	if d := consumerDetail(); d != "" {
		t.Errorf("/debug/lifecycle still says %q after recovery", d)
	}
	_ = p.Signal(syscall.SIGTERM)
	if code := exitCode(t, p); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}
