package pgkit

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/servicewright/servicewright/lock"
)

// TestAcquireExpiring takes a key per tick for many ticks, as a once-per-fleet cron
// job does, against a real PostgreSQL: once their expiry has passed, the next
// AcquireExpiring deletes the ticks' fence rows, instead of the table growing by one
// row per tick; a key taken with Acquire keeps its row; while a row lives its
// tokens increase, and a key whose row expired counts from 1 again.
func TestAcquireExpiring(t *testing.T) {
	pg := env.Postgres(t)
	ctx := context.Background()
	table := "fence_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	lk, err := NewLock(LockConfig{URL: pg.DSN(), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close(context.Background()) })
	admin, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	count := func(where string) int {
		t.Helper()
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE "+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// waitExpired polls the server's clock until every tick's expiry has passed: the rows
	// expire on the server's timer, outside the test's control.
	waitExpired := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // a bound for a failing wait
		for count("expires_at > now() AND key LIKE 'cron:%'") > 0 {
			if time.Now().After(deadline) {
				t.Fatal("rows still live after 30s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	take := func(key string, fenceTTL time.Duration, want uint64) {
		t.Helper()
		var (
			l   lock.Lease
			err error
		)
		if fenceTTL > 0 {
			l, err = lk.AcquireExpiring(ctx, key, "a", time.Minute, fenceTTL)
		} else {
			l, err = lk.Acquire(ctx, key, "a", time.Minute)
		}
		if err != nil || l.Token != want {
			t.Fatalf("acquire %q: token %d, %v; want %d", key, l.Token, err, want)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}

	take("permanent", 0, 1)
	take("again", time.Minute, 1)
	take("again", time.Minute, 2) // live: counts on
	const ticks = 200
	for i := range ticks {
		take(fmt.Sprintf("cron:job:%d", i), 200*time.Millisecond, 1)
	}
	waitExpired()
	take("cron:job:last", time.Millisecond, 1) // sweeps
	if n := count("key LIKE 'cron:job:%' AND key <> 'cron:job:last'"); n != 0 {
		t.Errorf("%d rows of past ticks remain after %d ticks, want 0", n, ticks)
	}
	if n := count("key IN ('permanent', 'again')"); n != 2 {
		t.Errorf("%d rows of the permanent and the live key, want 2", n)
	}
	take("permanent", 0, 2)  // kept its counter
	take("again", 0, 3)      // kept its counter, and is now permanent
	take("cron:job:0", 0, 1) // its row expired: counts from 1 again
	waitExpired()
	take("other", time.Millisecond, 1) // sweeps
	if n := count("true"); n != 4 {
		t.Errorf("%d rows, want permanent, again, cron:job:0 (now permanent) and other", n)
	}
}
