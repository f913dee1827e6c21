package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// WaitAdvisoryWaiters waits until exactly n sessions of the PostgreSQL server at dsn
// wait on an advisory lock (pg_locks, not granted), failing t after timeout. It polls
// the server's view: a waiting session gives the test nothing else to wait on.
func WaitAdvisoryWaiters(t testing.TB, dsn string, n int, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for deadline := time.Now().Add(timeout); ; {
		var got int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions wait on an advisory lock, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
