package pgkit

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/lock/locktest"
)

func newLock(t testing.TB, url string) *Lock {
	t.Helper()
	lk, err := NewLock(LockConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close(context.Background()) })
	return lk
}

func unique(t testing.TB) string {
	return strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// waitFree polls Inspect until key is free; leases on PostgreSQL lapse on the
// server's timer, outside the test's control.
func waitFree(t *testing.T, lk lock.Lock, key string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		h, err := lk.Inspect(context.Background(), key)
		if err == nil && !h.Held() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q still held after %v: %+v, %v", key, within, h, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRace has candidates on separate pools race for one free lock, many times
// (locktest.Race).
func TestRace(t *testing.T) {
	pg := env.Postgres(t)
	var locks []lock.Lock
	for range 4 {
		locks = append(locks, newLock(t, pg.DSN()))
	}
	locktest.Race(t, locks, unique(t), 10)
}

func TestLock(t *testing.T) {
	pg := env.Postgres(t)
	lk := newLock(t, pg.DSN())
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	locktest.Run(t, locktest.Harness{
		Lock:     lk,
		Key:      func(n string) string { return n + "-" + run },
		WaitPast: func(t *testing.T, k string, d time.Duration) { waitFree(t, lk, k, d+5*time.Second) },
	})
}

func TestLostSession(t *testing.T) {
	pg := env.Postgres(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)

	t.Run("a killed connection is a lost lease, free for the next owner at once", func(t *testing.T) {
		a, b := newLock(t, pg.DSN()), newLock(t, pg.DSN())
		k := unique(t)
		l, err := a.Acquire(ctx, k, "a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'servicewright-lock'
			AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)`); err != nil {
			t.Fatal(err)
		}
		waitFree(t, b, k, 5*time.Second)
		nl, err := b.Acquire(ctx, k, "b", time.Minute)
		if err != nil || nl.Token <= l.Token {
			t.Fatalf("acquire after the kill = %+v, %v; want a token above %d", nl, err, l.Token)
		}
		if err := a.Renew(ctx, l); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("renew on the killed session = %v, want ErrNotHeld", err)
		}
		if err := a.Release(ctx, l); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("release on the killed session = %v, want ErrNotHeld", err)
		}
	})

	t.Run("a server restart is a lost lease, and the lock works again after it", func(t *testing.T) {
		a := newLock(t, pg.DSN())
		k := unique(t)
		l, err := a.Acquire(ctx, k, "a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := pg.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := pg.Restart(); err != nil {
			t.Fatal(err)
		}
		if err := a.Renew(ctx, l); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("renew after the restart = %v, want ErrNotHeld", err)
		}
		nl, err := a.Acquire(ctx, k, "b", time.Minute)
		if err != nil || nl.Token <= l.Token {
			t.Fatalf("acquire after the restart = %+v, %v; want a token above %d", nl, err, l.Token)
		}
		if err := a.Release(ctx, nl); err != nil {
			t.Fatal(err)
		}
	})
}

func TestConfig(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    LockConfig
		fields []string
	}{
		{"nothing to open a connection with", LockConfig{}, []string{"URL"}},
		{"both URL and Connect", LockConfig{URL: "postgres://x/y", Connect: func(context.Context) (*pgx.Conn, error) { return nil, nil }}, []string{"Connect"}},
		{"a malformed URL and table", LockConfig{URL: "postgres://u:s3cret@host:notaport/db", Table: "x; DROP"}, []string{"URL", "Table"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewLock(c.cfg)
			locktest.AssertProblems(t, err, c.fields...)
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error echoes the password: %v", err)
			}
		})
	}
	t.Run("a TTL beyond idle_session_timeout's range", func(t *testing.T) {
		lk, err := NewLock(LockConfig{URL: "postgres://127.0.0.1:1/db"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = lk.Acquire(context.Background(), "k", "a", 30*24*time.Hour)
		locktest.AssertProblems(t, err, "ttl")
	})
}

func TestLapsedSessionsAreClosed(t *testing.T) {
	lk := newLock(t, env.Postgres(t).DSN())
	ctx := context.Background()
	k := unique(t)
	for i := range 3 {
		if _, err := lk.Acquire(ctx, k+strconv.Itoa(i), "a", 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	waitFree(t, lk, k+"2", 5*time.Second)
	time.Sleep(time.Second + 100*time.Millisecond) // past the sweep's allowance; not a synchronisation
	if _, err := lk.Acquire(ctx, k+"-next", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	lk.mu.Lock()
	n := len(lk.held)
	lk.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d sessions kept, want only the live lease's", n)
	}
}
