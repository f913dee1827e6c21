package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	const ttl = 3 * time.Second
	leaderFleetOn(t, leaderFleet{name: "PostgreSQL", ttl: ttl, campaign: 500 * time.Millisecond,
		led: func(t *testing.T, db *pgx.Conn, tok uint64) {
			var n int
			if err := db.QueryRow(context.Background(), `SELECT count(*) FROM servicewright_lock WHERE key = $1 AND token = $2`,
				digestKey, int64(tok)).Scan(&n); err != nil || n != 1 {
				t.Fatalf("fence row for token %d: %d, %v", tok, n, err)
			}
		},
		// The advisory lock goes with the killed process's session: the survivors
		// need not wait out the TTL.
		replaced: func(t *testing.T, took time.Duration) {
			if took >= ttl {
				t.Errorf("new leader %s after the kill: the lease was held for its TTL (%s), not freed with the connection", took, ttl)
			}
		}})
}
