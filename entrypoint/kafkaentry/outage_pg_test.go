package kafkaentry_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/servicewright/servicewright/internal/testenv"
)

// pgStore is a dependency in a real PostgreSQL, which the outage stops (fast
// shutdown: open transactions are rolled back, so no write is left half-known) and
// restarts on the same port. The poison value is stored with a qty
// the column cannot hold (SQLSTATE 22003): a failure of the message, not an outage.
type pgStore struct {
	pg   *testenv.Postgres
	pool *pgxpool.Pool
}

func (s *pgStore) store(ctx context.Context, v string) error {
	qty := 1
	if v == poisonValue {
		qty = 1 << 31
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO outage_orders (id, qty, deliveries) VALUES ($1, $2, 1)
		ON CONFLICT (id) DO UPDATE SET deliveries = outage_orders.deliveries + 1`, v, qty)
	return err
}

func (s *pgStore) down(t *testing.T) {
	if err := s.pg.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

func (s *pgStore) up(t *testing.T) {
	if err := s.pg.Restart(); err != nil {
		t.Fatal(err)
	}
}

func (s *pgStore) deliveries(t *testing.T) map[string]int {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, deliveries FROM outage_orders`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOutagePostgres stops the handler's PostgreSQL for several seconds mid-stream
// under two consumers of one group: no good message is dead-lettered or lost, each is
// stored exactly once after the restart, and a poison message still reaches the
// dead-letter topic.
func TestOutagePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a PostgreSQL")
	}
	pg, err := testenv.StartPostgres()
	testenv.Require(t, err)
	t.Cleanup(func() {
		if err := pg.Stop(); err != nil {
			t.Error(err)
		}
	})
	cfg, err := pgxpool.ParseConfig(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.ConnectTimeout = time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(),
		`CREATE TABLE outage_orders (id text PRIMARY KEY, qty int NOT NULL, deliveries int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	res := outageRun(t, &pgStore{pg: pg, pool: pool}, 4*time.Second)
	// A sanity bound, 10× the expected ~1s (Outage.Max, then a new connection), for a
	// loaded machine: the exact figure is TestOutageResumesWithinMax's, in virtual time.
	if res.resumeAfter > 20*time.Second {
		t.Errorf("consumption resumed %v after PostgreSQL accepted connections again, want within about 1s", res.resumeAfter)
	}
}
