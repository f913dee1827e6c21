package leader

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/lock/locktest"
	"github.com/servicewright/servicewright/pgkit"
	"github.com/servicewright/servicewright/rediskit"
)

// newClient returns a client of the package's Redis with short timeouts and no
// retries, so that a dead server is seen at once; it is closed when t ends.
func newClient(t testing.TB, r *testenv.Redis) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:         r.Addr(),
		DialTimeout:  250 * time.Millisecond,
		ReadTimeout:  250 * time.Millisecond,
		WriteTimeout: 250 * time.Millisecond,
		MaxRetries:   -1,
		// One dial attempt: a dead server is reported at once, not after 5 × 100ms.
		DialerRetries: 1,
		Protocol:      2,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newRedisLock returns a rediskit.Lock on the package's Redis.
func newRedisLock(t testing.TB, r *testenv.Redis) *rediskit.Lock {
	t.Helper()
	lk, err := rediskit.NewLock(newClient(t, r), rediskit.LockConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

// keyFor names a lock after the test, unique to this run, so that -count=N runs
// against the same Redis do not see each other's leases and counters.
func keyFor(t testing.TB, suffix string) string {
	return strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()) + suffix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// assertProblems checks err is a *fault.ConfigError naming exactly fields, in order.
var assertProblems = locktest.AssertProblems

// newPGLock returns a pgkit.Lock on the package's PostgreSQL, closed when t ends.
func newPGLock(t testing.TB, pg *testenv.Postgres) *pgkit.Lock {
	t.Helper()
	lk, err := pgkit.NewLock(pgkit.LockConfig{URL: pg.DSN()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close(context.Background()) })
	return lk
}
