package health_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servicewright/servicewright/rediskit"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/internal/testenv"
)

// pgPinger is a reconnecting, locked *pgx.Conn: the stand-in for a *pgxpool.Pool,
// which recovers the same way when the server comes back.
type pgPinger struct {
	dsn string
	mu  sync.Mutex
	c   *pgx.Conn
}

func (p *pgPinger) Ping(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		c, err := pgx.Connect(ctx, p.dsn)
		if err != nil {
			return err
		}
		p.c = c
	}
	if err := p.c.Ping(ctx); err != nil {
		p.close()
		return err
	}
	return nil
}

func (p *pgPinger) close() {
	if p.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = p.c.Close(ctx)
		p.c = nil
	}
}

func (p *pgPinger) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.close()
}

type probe struct {
	code    int
	answer  health.Answer
	body    string
	elapsed time.Duration
}

func fetch(t *testing.T, c *http.Client, url string) probe {
	t.Helper()
	start := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	p := probe{code: resp.StatusCode, body: string(b), elapsed: time.Since(start)}
	if err := json.Unmarshal(b, &p.answer); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return p
}

// pollOK asks until the answer is 200, for up to 10 s.
func pollOK(t *testing.T, c *http.Client, url string) probe {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := fetch(t, c, url)
		if p.code == 200 || time.Now().After(deadline) {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const (
	integrationTimeout = 500 * time.Millisecond
	// answerBound is a sanity bound on an answer, 10× CheckTimeout, that a loaded
	// 2-core CI machine cannot reach while a check waited out past its timeout (a
	// dead server's connect or read) still can. That the answer comes at CheckTimeout
	// exactly is checked in virtual time (TestReadinessHangingCheckIsOneTimedOutEntry).
	answerBound = 10 * integrationTimeout
)

func TestReadinessAgainstRealRedisAndPostgres(t *testing.T) {
	rs, pg := env.Redis(t), env.Postgres(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { rdb.Close() })
	pgp := &pgPinger{dsn: pg.DSN()}
	t.Cleanup(pgp.Close)

	h := newReadiness(t, ready(), health.ReadinessConfig{
		CheckTimeout: integrationTimeout,
		Checks: map[string]health.Check{
			"redis":     rediskit.Check(rdb),
			"postgres":  health.Postgres(pgp),
			"redis-tcp": health.Dial("tcp", rs.Addr()),
		},
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := srv.Client()

	t.Run("both up answers ok", func(t *testing.T) {
		p := fetch(t, c, srv.URL)
		if p.code != 200 || p.answer.Status != "ok" || len(p.answer.Checks) != 3 {
			t.Fatalf("got %d %s", p.code, p.body)
		}
	})

	t.Run("killed redis degrades within the timeout", func(t *testing.T) {
		if err := rs.Kill(); err != nil {
			t.Fatal(err)
		}
		p := fetch(t, c, srv.URL)
		t.Logf("answered in %v: %s", p.elapsed, p.body)
		if p.code != 200 || p.answer.Status != "degraded" { // shared: degraded, still ready
			t.Fatalf("got %d %s", p.code, p.body)
		}
		if r := p.answer.Checks["redis"]; r.OK || r.Detail == "" || r.Detail == "ok" {
			t.Fatalf("redis entry %+v", r)
		}
		if r := p.answer.Checks["redis-tcp"]; r.OK || r.Detail != "*net.OpError" {
			t.Fatalf("redis-tcp entry %+v", r)
		}
		if r := p.answer.Checks["postgres"]; !r.OK {
			t.Fatalf("postgres entry %+v", r)
		}
		if p.elapsed > answerBound {
			t.Fatalf("answered in %v, want about CheckTimeout %v (at most %v)", p.elapsed, integrationTimeout, answerBound)
		}
	})

	t.Run("restarted redis recovers with the same client", func(t *testing.T) {
		if err := rs.Restart(); err != nil {
			t.Fatal(err)
		}
		if p := pollOK(t, c, srv.URL); p.code != 200 {
			t.Fatalf("still %d %s", p.code, p.body)
		}
	})

	t.Run("killed postgres degrades and recovers", func(t *testing.T) {
		if err := pg.Kill(); err != nil {
			t.Fatal(err)
		}
		p := fetch(t, c, srv.URL)
		t.Logf("answered in %v: %s", p.elapsed, p.body)
		if p.code != 200 || p.answer.Checks["postgres"].OK || !p.answer.Checks["redis"].OK {
			t.Fatalf("got %d %s", p.code, p.body)
		}
		if p.elapsed > answerBound {
			t.Fatalf("answered in %v, want about CheckTimeout %v (at most %v)", p.elapsed, integrationTimeout, answerBound)
		}
		if err := pg.Restart(); err != nil {
			t.Fatal(err)
		}
		if p := pollOK(t, c, srv.URL); p.code != 200 {
			t.Fatalf("still %d %s", p.code, p.body)
		}
	})
}

func TestReadinessHangingCheckBesideRealOnes(t *testing.T) {
	rs, pg := env.Redis(t), env.Postgres(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { rdb.Close() })
	pgp := &pgPinger{dsn: pg.DSN()}
	t.Cleanup(pgp.Close)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })

	logger, _ := observed()
	h := newReadiness(t, ready(), health.ReadinessConfig{
		CheckTimeout: integrationTimeout,
		Logger:       logger,
		Checks: map[string]health.Check{
			"redis":    rediskit.Check(rdb),
			"postgres": health.Postgres(pgp),
			// Ignores its ctx until the test ends.
			"kafka": health.CheckFunc(func(context.Context) error { <-release; return nil }),
		},
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	p := fetch(t, srv.Client(), srv.URL)
	want := map[string]health.CheckResult{
		"kafka":    {OK: false, Detail: "timed out after 500ms"},
		"postgres": {OK: true, Detail: "ok"},
		"redis":    {OK: true, Detail: "ok"},
	}
	if p.code != 200 || p.answer.Status != "degraded" || !equalChecks(p.answer.Checks, want) {
		t.Fatalf("got %d %s", p.code, p.body)
	}
	if p.elapsed < integrationTimeout || p.elapsed > answerBound {
		t.Fatalf("answered in %v, want within [%v, %v]", p.elapsed, integrationTimeout, answerBound)
	}
}

func equalChecks(a, b map[string]health.CheckResult) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestReadinessRealDriverErrorDoesNotLeakDSN(t *testing.T) {
	env.Postgres(t) // a real driver, pointed at a port where nothing listens
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	const password = "Tr0ub4dor-and-3"
	pgp := &pgPinger{dsn: "postgres://orders:" + password + "@127.0.0.1:" + strconv.Itoa(port) + "/orders?sslmode=disable"}
	t.Cleanup(pgp.Close)
	logger, logs := observed()
	h := newReadiness(t, ready(), health.ReadinessConfig{
		CheckTimeout: integrationTimeout, Logger: logger,
		Checks: map[string]health.Check{"postgres": health.Postgres(pgp)},
	})
	a := get(t, h, "/readyz")
	if a.code != 200 || a.answer.Checks["postgres"].Detail != "*pgconn.ConnectError" {
		t.Fatalf("got %d %s", a.code, a.body)
	}
	if strings.Contains(a.body, password) || strings.Contains(a.body, "orders") || strings.Contains(a.body, strconv.Itoa(port)) {
		t.Fatalf("body leaks connection details: %s", a.body)
	}
	if logs.FilterMessage("readiness check failed").Len() != 1 {
		t.Fatalf("failure not logged: %v", logs.All())
	}
}

func TestDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dead, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(dead))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()

	if err := health.Dial("tcp", ln.Addr().String()).Health(ctx); err != nil {
		t.Fatalf("live broker: %v", err)
	}
	if err := health.Dial("tcp", deadAddr, ln.Addr().String()).Health(ctx); err != nil {
		t.Fatalf("one live broker of two: %v", err)
	}
	err = health.Dial("tcp", deadAddr, deadAddr).Health(ctx)
	if err == nil || health.ErrorType(err) != "*net.OpError" {
		t.Fatalf("all dead: %v (%s)", err, health.ErrorType(err))
	}
	if err := health.Dial("tcp").Health(ctx); err == nil {
		t.Fatal("no address: want an error")
	}
}
