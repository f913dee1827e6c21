package pgkit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestListen: Listen calls notify once it listens (for what it may have missed), then
// once per NOTIFY on its channel and not for another channel's; it reconnects after
// its connection is killed, calling notify again; it returns when ctx is done.
func TestListen(t *testing.T) {
	pg := env.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	connect := func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, pg.DSN()) }
	notices := make(chan struct{}, 16)
	var wg sync.WaitGroup
	wg.Go(func() { Listen(ctx, connect, "listen_test", func() { notices <- struct{}{} }) })
	defer wg.Wait()
	defer cancel()

	admin, err := pgx.Connect(context.Background(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	await := func(what string) {
		t.Helper()
		select {
		case <-notices:
		case <-time.After(30 * time.Second):
			t.Fatalf("no notice: %s", what)
		}
	}
	await("once listening")
	if _, err := admin.Exec(context.Background(), `SELECT pg_notify('other_channel', ''), pg_notify('listen_test', 'x')`); err != nil {
		t.Fatal(err)
	}
	await("NOTIFY listen_test")
	select {
	case <-notices:
		t.Fatal("a notice for another channel")
	default:
	}
	// Kill the listener's session: it reconnects and says so.
	if _, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	await("after the reconnect")
	if _, err := admin.Exec(context.Background(), `NOTIFY listen_test`); err != nil {
		t.Fatal(err)
	}
	await("NOTIFY on the new connection")
}
