package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/servicewright/servicewright/internal/proctest"
)

const (
	testTTL      = 2 * time.Second
	testCampaign = 200 * time.Millisecond
)

// fleetReplica is one example process campaigning for the digest lease.
type fleetReplica struct {
	id    string
	proc  *proctest.Proc
	probe string
}

type leaseView struct {
	Held  bool   `json:"held"`
	Token uint64 `json:"token"`
}

// lease reads the replica's view of the digest lease from /debug/lifecycle; ok is
// false when the replica does not answer.
func (r *fleetReplica) lease(t *testing.T) (leaseView, bool) {
	a, err := get(t, "http://"+r.probe+"/debug/lifecycle")
	if err != nil || a.code != 200 {
		return leaseView{}, false
	}
	var doc struct {
		Leadership map[string]leaseView `json:"leadership"`
	}
	if json.Unmarshal([]byte(a.raw), &doc) != nil {
		return leaseView{}, false
	}
	return doc.Leadership[digestKey], true
}

func startFleet(t *testing.T, n int, extra ...string) []*fleetReplica {
	t.Helper()
	var reps []*fleetReplica
	for i := range n {
		r := &fleetReplica{id: fmt.Sprintf("replica-%d-%d", i+1, time.Now().UnixNano()%1e6)}
		r.proc, r.probe = startExample(t, append([]string{"INSTANCE_ID=" + r.id,
			"EXAMPLE_LEADER_TTL=" + testTTL.String(), "EXAMPLE_CAMPAIGN_EVERY=" + testCampaign.String(),
			"EXAMPLE_PUBLISH_EVERY=50ms", "SW_LOG_LEVEL=info"}, extra...)...)
		reps = append(reps, r)
	}
	for _, r := range reps {
		mustLog(t, r.proc, map[string]string{"msg": "service ready"}, 20*time.Second)
	}
	return reps
}

// leaderOf waits until exactly one of reps holds the lease and returns it.
func leaderOf(t *testing.T, reps []*fleetReplica, timeout time.Duration) (*fleetReplica, uint64) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var holder *fleetReplica
		var token uint64
		holders := 0
		for _, r := range reps {
			if v, ok := r.lease(t); ok && v.Held {
				holders++
				holder, token = r, v.Token
			}
		}
		if holders == 1 {
			return holder, token
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d holders after %s", holders, timeout)
		}
	}
}

func without(reps []*fleetReplica, r *fleetReplica) []*fleetReplica {
	var out []*fleetReplica
	for _, x := range reps {
		if x != r {
			out = append(out, x)
		}
	}
	return out
}

// firstWrite waits up to 5 s for the leader of term token to write a digest, and
// returns when its first write was stored.
func firstWrite[T ~int64 | ~uint64](t *testing.T, db *pgx.Conn, token T) time.Time {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("the new leader never wrote")
		}
		var first *time.Time
		_ = db.QueryRow(context.Background(), `SELECT min(written_at) FROM digest_log WHERE token = $1`, int64(token)).Scan(&first)
		if first != nil {
			return *first
		}
	}
}

func pgConn(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), env.Postgres(t).DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	_, _ = c.Exec(context.Background(), `DROP TABLE IF EXISTS digests, digest_log`)
	return c
}

func TestLeadership(t *testing.T) {
	if testing.Short() {
		t.Skip("starts several replicas")
	}
	top := t // processes belong to the whole test, not to the subtest that starts them
	r, db := env.Redis(t), pgConn(t)
	backends := []string{"REDIS_URL=" + r.URL(), "DATABASE_URL=" + env.Postgres(t).DSN()}
	reps := startFleet(t, 3, backends...)

	t.Run("exactly one replica holds the lease at every sample", func(t *testing.T) {
		leaderOf(t, reps, 10*time.Second)
		for i := range 100 {
			holders := 0
			for _, rep := range reps {
				if v, ok := rep.lease(t); ok && v.Held {
					holders++
				}
			}
			if holders != 1 {
				t.Fatalf("sample %d: %d holders", i, holders)
			}
		}
	})

	var tokens []uint64
	t.Run("a graceful stop hands the lease on within one campaign interval", func(t *testing.T) {
		old, tok := leaderOf(t, reps, 10*time.Second)
		tokens = append(tokens, tok)
		sent := time.Now()
		_ = old.proc.Signal(syscall.SIGTERM)
		reps = without(reps, old)
		_, tok = leaderOf(t, reps, 10*time.Second)
		took := time.Since(sent)
		tokens = append(tokens, tok)
		if code := exitCode(t, old.proc); code != 0 {
			t.Fatalf("leader exited %d", code)
		}
		t.Logf("graceful failover: %s (CampaignEvery %s)", took, testCampaign)
		// It takes about one CampaignEvery (200ms); a lease not released would be
		// taken only once it expired, a TTL (2s, ten times as long) later.
		if took >= testTTL {
			t.Errorf("new leader %s after SIGTERM; want before the TTL (%s): the lease was not released", took, testTTL)
		}
	})

	t.Run("a killed leader is replaced within TTL + CampaignEvery", func(t *testing.T) {
		old, _ := leaderOf(t, reps, 10*time.Second)
		_ = old.proc.Signal(syscall.SIGKILL)
		_, _ = old.proc.Wait(10 * time.Second)
		killed := time.Now()
		reps = without(reps, old)
		_, tok := leaderOf(t, reps, 30*time.Second)
		took := time.Since(killed)
		tokens = append(tokens, tok)
		t.Logf("crash failover: %s (TTL %s + CampaignEvery %s)", took, testTTL, testCampaign)
		// A sanity bound, ten times TTL + CampaignEvery: the expiry's timing is the
		// leader package's to test (TestBackendLeadership); here, that one takes over.
		if took > 10*(testTTL+testCampaign) {
			t.Errorf("new leader after %s; want about TTL + CampaignEvery", took)
		}
	})

	t.Run("tokens strictly increase across terms", func(t *testing.T) {
		for i := 1; i < len(tokens); i++ {
			if tokens[i] <= tokens[i-1] {
				t.Errorf("tokens %v do not increase", tokens)
			}
		}
	})

	t.Run("a leader paused past its TTL gets none of its writes accepted", func(t *testing.T) {
		reps = append(reps, startFleet(top, 1, backends...)...)
		pausedLeaderWritesNothing(t, db, reps)
	})

	t.Run("Redis lost under the leader: it stops leading, readiness names redis, leadership resumes", func(t *testing.T) {
		ldr, _ := leaderOf(t, reps, 10*time.Second)
		var fence int64
		_ = db.QueryRow(context.Background(), `SELECT fence FROM digests WHERE name = 'orders'`).Scan(&fence)
		if err := r.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		for {
			if v, ok := ldr.lease(t); ok && !v.Held {
				break
			}
			// A sanity bound: the leader steps down at TTL - Margin by its own clock,
			// which the leader package's TestBackendLeadership holds to; across a
			// process boundary on a loaded machine only "it stops" is asserted.
			if time.Since(killed) > 10*testTTL {
				t.Fatal("still leading ten TTLs after Redis was killed")
			}
		}
		t.Logf("stopped leading %s after Redis died (TTL - Margin: %s)", time.Since(killed), testTTL-testTTL/15)
		a := readyzUntil(t, ldr.probe, "degraded", 15*time.Second)
		checks, _ := a.body["checks"].(map[string]any)
		redisCheck, _ := checks["redis"].(map[string]any)
		// Redis is shared by every replica: its check names it and degrades readiness
		// without withdrawing it (health.Gating's rule).
		if a.code != 200 || a.body["status"] != "degraded" || redisCheck["ok"] != false {
			t.Errorf("/readyz with Redis down = %d %s, want 200 degraded naming redis", a.code, a.raw)
		}
		// Redis comes back empty: its fence counter restarts at 1, below the store's
		// fence. FenceFloor advances it, so the first term claims at once.
		if err := r.Restart(); err != nil {
			t.Fatal(err)
		}
		// A term sampled while its claim is still running may hold a token the
		// store refuses (FenceFloor is skipped while Redis does not answer in time,
		// just after its restart); the next term must then draw one above the fence.
		_, tok := leaderOf(t, reps, 10*time.Second)
		for deadline := time.Now().Add(10 * time.Second); int64(tok) <= fence && time.Now().Before(deadline); {
			_, tok = leaderOf(t, reps, 10*time.Second)
		}
		if int64(tok) <= fence {
			t.Errorf("token after the loss %d is not above the store's fence %d", tok, fence)
		}
		var wrote int
		for deadline := time.Now().Add(5 * time.Second); wrote == 0 && time.Now().Before(deadline); {
			_ = db.QueryRow(context.Background(), `SELECT count(*) FROM digest_log WHERE token = $1`, int64(tok)).Scan(&wrote)
		}
		if wrote == 0 {
			t.Error("the first leader after the loss could not write: its claim was refused")
		}
	})

	for _, rep := range reps {
		_ = rep.proc.Signal(syscall.SIGTERM)
	}
	for _, rep := range reps {
		if code := exitCode(t, rep.proc); code != 0 {
			t.Errorf("%s exited %d", rep.id, code)
		}
	}
}

// pausedLeaderWritesNothing SIGSTOPs the leader of reps until another replica leads
// and has written, then SIGCONTs it: the woken leader ends its term at its first
// Live() check, and none of its writes is accepted after its successor's first.
func pausedLeaderWritesNothing(t *testing.T, db *pgx.Conn, reps []*fleetReplica) {
	t.Helper()
	paused, oldTok := leaderOf(t, reps, 10*time.Second)
	_ = paused.proc.Signal(syscall.SIGSTOP)
	_, newTok := leaderOf(t, without(reps, paused), 10*time.Second)
	if newTok <= oldTok {
		t.Fatalf("new token %d not above %d", newTok, oldTok)
	}
	newFirst := firstWrite(t, db, newTok)
	_ = paused.proc.Signal(syscall.SIGCONT)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if v, ok := paused.lease(t); ok && !v.Held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the woken leader still claims the lease")
		}
	}
	var late int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM digest_log WHERE instance = $1 AND written_at > $2`,
		paused.id, newFirst).Scan(&late); err != nil {
		t.Fatal(err)
	}
	if late != 0 {
		t.Errorf("%d writes of the paused leader were accepted after the new leader's first", late)
	}
}
