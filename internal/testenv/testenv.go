package testenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// ErrMissing is wrapped by the error a Start function returns when a service's binary
// is not installed. The message names the binary and the Debian package to install.
var ErrMissing = errors.New("testenv: service not installed")

// ErrStopped is returned by Restart after Stop: the service's directory is gone.
var ErrStopped = errors.New("testenv: service stopped")

func missing(binary, aptPackage string) error {
	return fmt.Errorf("%w: %s not found (apt-get install -y %s)", ErrMissing, binary, aptPackage)
}

// Require reports a service's start error to t. A nil err does nothing. An error
// wrapping ErrMissing skips the test, unless the environment variable CI is "true",
// where it fails the test: CI must not pass by skipping. Any other error fails the test.
func Require(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, ErrMissing) && os.Getenv("CI") != "true" {
		t.Skip(err)
		return
	}
	t.Fatal(err)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. Another process
// may take it before it is used; the Start functions retry on a collision. The port
// is drawn from below the kernel's ephemeral range (ip_local_port_range), where no
// listener bound to port 0 and no outgoing connection is ever given a port, so the
// only processes that can take it are those handed a port by FreePort too: a test
// server or example that binds ":0" on a loaded machine no longer steals it.
func FreePort() (int, error) {
	lo := ephemeralLow()
	for range 64 {
		if lo <= 10000 {
			break
		}
		port := 10000 + rand.IntN(lo-10000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: draw again
		}
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("testenv: free port: %w", err)
		}
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testenv: free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("testenv: free port: %w", err)
	}
	return port, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0 when it
// cannot be read.
func ephemeralLow() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return n
}

// Env holds the services a package's TestMain started through Run. Tests read it
// through Redis and Postgres; it is written only before m.Run, so parallel tests may
// share it.
type Env struct {
	redis       *Redis
	redisErr    error
	postgres    *Postgres
	postgresErr error
}

var (
	errRedisNotRequested    = errors.New("testenv: Redis was not requested in TestMain (testenv.WithRedis)")
	errPostgresNotRequested = errors.New("testenv: PostgreSQL was not requested in TestMain (testenv.WithPostgres)")
)

// Redis returns the package's Redis, or ends the test through Require when it could
// not be started.
func (e *Env) Redis(t testing.TB) *Redis {
	t.Helper()
	if e.redis == nil && e.redisErr == nil {
		t.Fatal(errRedisNotRequested)
	}
	Require(t, e.redisErr)
	return e.redis
}

// Postgres returns the package's PostgreSQL, or ends the test through Require when it
// could not be started.
func (e *Env) Postgres(t testing.TB) *Postgres {
	t.Helper()
	if e.postgres == nil && e.postgresErr == nil {
		t.Fatal(errPostgresNotRequested)
	}
	Require(t, e.postgresErr)
	return e.postgres
}

// Option selects what Run starts and checks.
type Option func(*runConfig)

type runConfig struct {
	redis     bool
	redisOpts []RedisOption
	pg        bool
	pgOpts    []PostgresOption
	leakOpts  []goleak.Option
}

// WithRedis makes Run start a Redis for the package.
func WithRedis(opts ...RedisOption) Option {
	return func(c *runConfig) { c.redis, c.redisOpts = true, opts }
}

// WithPostgres makes Run start a PostgreSQL for the package.
func WithPostgres(opts ...PostgresOption) Option {
	return func(c *runConfig) { c.pg, c.pgOpts = true, opts }
}

// WithLeakOptions passes options (ignored goroutines) to the goleak check.
func WithLeakOptions(opts ...goleak.Option) Option {
	return func(c *runConfig) { c.leakOpts = append(c.leakOpts, opts...) }
}

// Run starts the selected services (concurrently), records them in env, runs the
// package's tests, and stops the services whatever the tests' outcome. Then, only when
// the tests passed, it checks for leaked goroutines with goleak and fails the run if
// any remain. It returns the exit code for os.Exit.
//
// A service that fails to start is not fatal here: its error is kept in env and each
// test that asks for the service reports it (see Require).
func Run(m *testing.M, env *Env, opts ...Option) int {
	var cfg runConfig
	for _, o := range opts {
		o(&cfg)
	}
	var wg sync.WaitGroup
	if cfg.redis {
		wg.Go(func() { env.redis, env.redisErr = StartRedis(cfg.redisOpts...) })
	}
	if cfg.pg {
		wg.Go(func() { env.postgres, env.postgresErr = StartPostgres(cfg.pgOpts...) })
	}
	wg.Wait()

	code := m.Run()

	if env.redis != nil {
		if err := env.redis.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if env.postgres != nil {
		if err := env.postgres.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if code == 0 {
		if err := goleak.Find(cfg.leakOpts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	return code
}
