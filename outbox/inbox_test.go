package outbox_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/outbox"
)

// TestInboxOnce: a message handled eight times, four of them at once, applies its
// effect once; a handler's error rolls back the record too, so a retry applies it.
func TestInboxOnce(t *testing.T) {
	pool := freshDB(t)
	ctx := context.Background()
	in, err := outbox.NewInbox("INBOX_TABLE", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Verify(ctx, pool); err == nil || !strings.Contains(err.Error(), `"inbox" does not exist`) {
		t.Fatalf("verify without the table: %v", err)
	}
	if err := in.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := in.Verify(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (id text PRIMARY KEY, n int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	msg := kafka.Message{Headers: []kafka.Header{{Key: "outbox-event-id", Value: []byte("e1")}}}
	apply := func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO effects VALUES ('e1', 1) ON CONFLICT (id) DO UPDATE SET n = effects.n + 1`)
		return err
	}

	boom := errors.New("boom")
	if err := in.Handle(ctx, pool, msg, func(ctx context.Context, tx pgx.Tx) error {
		if err := apply(ctx, tx); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("failing handler: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() { errs <- in.Handle(ctx, pool, msg, apply) })
	}
	wg.Wait()
	for range 4 {
		errs <- in.Handle(ctx, pool, msg, apply)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT n FROM effects WHERE id = 'e1'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("effect applied %d times, want once", n)
	}
	if err := in.Handle(ctx, pool, kafka.Message{}, apply); !errors.Is(err, outbox.ErrNoEventID) {
		t.Fatalf("message without an id: %v", err)
	}
}

// TestInboxWrongShape: an inbox table of the wrong shape is a ConfigError naming it.
func TestInboxWrongShape(t *testing.T) {
	pool := freshDB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE seen (id uuid PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	in, _ := outbox.NewInbox("INBOX_TABLE", "seen")
	err := in.Verify(ctx, pool)
	if _, ok := errors.AsType[*fault.ConfigError](err); !ok || !strings.Contains(err.Error(), `"seen" has column id of type uuid, want text`) {
		t.Fatalf("verify: %v", err)
	}
}
