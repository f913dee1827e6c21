package e2e

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// TestLeadershipPostgres runs the digest publisher's fleet with DATABASE_URL set and
// REDIS_URL not: the lease is a PostgreSQL advisory lock.
func TestLeadershipPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts several replicas")
	}
	// Each lock operation is bounded by CampaignEvery; 500ms rather than the Redis
	// tests' 200ms leaves room for a new PostgreSQL session on a machine loaded by
	// the other packages' tests (a fork and an authentication), which at 200ms timed
	// out campaign after campaign. The crash failover does not wait for a campaign:
	// the release notice wakes the survivors.
	const ttl, campaign = 3 * time.Second, 500 * time.Millisecond
	top := t
	db := pgConn(t)
	backends := []string{"DATABASE_URL=" + env.Postgres(t).DSN(), "EXAMPLE_LEADER_TTL=" + ttl.String(),
		"EXAMPLE_CAMPAIGN_EVERY=" + campaign.String()}
	reps := startFleet(t, 3, backends...)
	var tokens []uint64

	t.Run("one of three leads, through PostgreSQL", func(t *testing.T) {
		_, tok := leaderOf(t, reps, 10*time.Second)
		tokens = append(tokens, tok)
		var n int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM servicewright_lock WHERE key = $1 AND token = $2`,
			digestKey, int64(tok)).Scan(&n); err != nil || n != 1 {
			t.Fatalf("fence row for token %d: %d, %v", tok, n, err)
		}
	})

	t.Run("a graceful stop hands over on the release notice", func(t *testing.T) {
		old, _ := leaderOf(t, reps, 10*time.Second)
		_ = old.proc.Signal(syscall.SIGTERM)
		if code := exitCode(t, old.proc); code != 0 {
			t.Fatalf("leader exited %d", code)
		}
		gone := time.Now()
		reps = without(reps, old)
		_, tok := leaderOf(t, reps, 10*time.Second)
		tokens = append(tokens, tok)
		t.Logf("graceful failover on PostgreSQL: %s after the exit (CampaignEvery %s)", time.Since(gone), campaign)
	})

	t.Run("a SIGKILLed leader is replaced without waiting out the TTL", func(t *testing.T) {
		reps = append(reps, startFleet(top, 1, backends...)...)
		old, _ := leaderOf(t, reps, 10*time.Second)
		_ = old.proc.Signal(syscall.SIGKILL)
		_, _ = old.proc.Wait(10 * time.Second)
		killed := time.Now()
		reps = without(reps, old)
		_, tok := leaderOf(t, reps, 10*time.Second)
		took := time.Since(killed)
		tokens = append(tokens, tok)
		t.Logf("crash failover on PostgreSQL: %s (CampaignEvery %s, TTL %s)", took, campaign, ttl)
		if took >= ttl {
			t.Errorf("new leader %s after the kill: the lease was held for its TTL (%s), not freed with the connection", took, ttl)
		}
	})

	t.Run("tokens strictly increase across terms", func(t *testing.T) {
		for i := 1; i < len(tokens); i++ {
			if tokens[i] <= tokens[i-1] {
				t.Errorf("tokens %v do not increase", tokens)
			}
		}
	})

	t.Run("a leader paused past the session timeout writes nothing after its successor's first write", func(t *testing.T) {
		paused, oldTok := leaderOf(t, reps, 10*time.Second)
		_ = paused.proc.Signal(syscall.SIGSTOP)
		_, newTok := leaderOf(t, without(reps, paused), 10*time.Second)
		if newTok <= oldTok {
			t.Fatalf("new token %d not above %d", newTok, oldTok)
		}
		newFirst := firstWrite(t, db, newTok)
		_ = paused.proc.Signal(syscall.SIGCONT)
		for deadline := time.Now().Add(5 * time.Second); ; {
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
	})
}
