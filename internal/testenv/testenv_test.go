package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// fakeTB records what Require asked for instead of ending the test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skip(args ...any)      { f.skipped, f.msg = true, fmt.Sprint(args...) }
func (f *fakeTB) Fatal(args ...any)     { f.failed, f.msg = true, fmt.Sprint(args...) }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true }

func TestRequire(t *testing.T) {
	miss := missing("redis-server", "redis-server")
	for _, tc := range []struct {
		name       string
		ci         string
		err        error
		skip, fail bool
	}{
		{"nil error does nothing", "true", nil, false, false},
		{"missing binary skips outside CI", "", miss, true, false},
		{"missing binary skips when CI is not exactly true", "1", miss, true, false},
		{"missing binary fails under CI", "true", miss, false, true},
		{"other errors always fail", "", errors.New("boom"), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			f := &fakeTB{}
			Require(f, tc.err)
			if f.skipped != tc.skip || f.failed != tc.fail {
				t.Fatalf("skipped=%v failed=%v, want %v %v", f.skipped, f.failed, tc.skip, tc.fail)
			}
			if tc.err != nil && !strings.Contains(f.msg, tc.err.Error()) {
				t.Fatalf("reason %q does not carry the error %q", f.msg, tc.err)
			}
		})
	}
}

func TestEnvServiceNotRequestedFails(t *testing.T) {
	var e Env
	f := &fakeTB{}
	e.Redis(f)
	if !f.failed || !strings.Contains(f.msg, "WithRedis") {
		t.Fatalf("failed=%v msg=%q", f.failed, f.msg)
	}
	f = &fakeTB{}
	e.Postgres(f)
	if !f.failed || !strings.Contains(f.msg, "WithPostgres") {
		t.Fatalf("failed=%v msg=%q", f.failed, f.msg)
	}
}

func TestFreePortIsBindable(t *testing.T) {
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("port %d: %v", p, err)
	}
	l.Close()
}

func TestMissingBinaryWrapsErrMissing(t *testing.T) {
	t.Run("redis names binary and package", func(t *testing.T) {
		_, err := StartRedis(RedisBinary("/nonexistent/redis-server"))
		if !errors.Is(err, ErrMissing) {
			t.Fatalf("err = %v, want ErrMissing", err)
		}
		if !strings.Contains(err.Error(), "/nonexistent/redis-server") || !strings.Contains(err.Error(), "apt-get install -y redis-server") {
			t.Fatalf("message %q", err)
		}
	})
	t.Run("postgres names binaries and package", func(t *testing.T) {
		_, err := StartPostgres(PostgresBinDir("/nonexistent"))
		if !errors.Is(err, ErrMissing) {
			t.Fatalf("err = %v, want ErrMissing", err)
		}
		if !strings.Contains(err.Error(), "initdb") || !strings.Contains(err.Error(), "apt-get install -y postgresql") {
			t.Fatalf("message %q", err)
		}
	})
}

func TestRedisKillRestartStop(t *testing.T) {
	Require(t, env.redisErr) // skips early on machines without redis-server
	r, err := StartRedis()
	Require(t, err)
	t.Cleanup(func() { r.Stop() })

	if want := "redis://127.0.0.1:" + strconv.Itoa(r.Port()) + "/0"; r.URL() != want {
		t.Fatalf("URL = %q, want %q", r.URL(), want)
	}
	if !pingRedis(r.Addr()) {
		t.Fatal("no PONG after start")
	}
	pid := r.proc.pid()

	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("pid %d alive after Kill", pid)
	}
	if pingRedis(r.Addr()) {
		t.Fatal("PONG after Kill")
	}
	if err := r.Kill(); err != nil {
		t.Fatalf("second Kill: %v", err)
	}

	port := r.Port()
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if r.Port() != port || !pingRedis(r.Addr()) {
		t.Fatalf("after Restart: port %d (was %d), ping %v", r.Port(), port, pingRedis(r.Addr()))
	}
	if err := r.Restart(); err != nil { // restart of a running server stops it first
		t.Fatalf("Restart while running: %v", err)
	}

	dir := r.dir
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir %s still there: %v", dir, err)
	}
	if err := r.Restart(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Restart after Stop = %v, want ErrStopped", err)
	}
}

func pgExec(t *testing.T, dsn, sql string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, sql).ReadAll()
	return err
}

func TestPostgresKillRestartStop(t *testing.T) {
	pg := env.Postgres(t)
	if err := pgExec(t, pg.DSN(), "CREATE TABLE kept (v int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	pid := pg.proc.pid()
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("postmaster %d alive after Kill", pid)
	}
	if err := pgExec(t, pg.DSN(), "SELECT 1"); err == nil {
		t.Fatal("query succeeded after Kill")
	}
	port := pg.Port()
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	if pg.Port() != port {
		t.Fatalf("port %d, was %d", pg.Port(), port)
	}
	if err := pgExec(t, pg.DSN(), "SELECT v FROM kept"); err != nil {
		t.Fatalf("cluster not kept across Kill+Restart: %v", err)
	}
	if err := pg.Restart(); err != nil { // fast shutdown, then start
		t.Fatalf("Restart while running: %v", err)
	}
	if err := pgExec(t, pg.DSN(), "DROP TABLE kept"); err != nil {
		t.Fatal(err)
	}
}

func TestPostgresStopIsIdempotentAndRemovesDir(t *testing.T) {
	Require(t, env.postgresErr)
	pg, err := StartPostgres()
	Require(t, err)
	root := pg.root
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("dir %s still there: %v", root, err)
	}
	if err := pg.Restart(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Restart after Stop = %v, want ErrStopped", err)
	}
}

const helperEnv = "TESTENV_HELPER"

// TestHelperStartsRedis is not a test: TestServerDiesWithTestBinary runs it in a child
// test binary, which starts a server, reports it and waits to be killed.
func TestHelperStartsRedis(t *testing.T) {
	if os.Getenv(helperEnv) != "redis" {
		t.Skip("helper process only")
	}
	r, err := StartRedis()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(r.proc.pid(), r.dir)
	time.Sleep(time.Minute)
	os.Exit(1)
}

func TestServerDiesWithTestBinary(t *testing.T) {
	Require(t, env.redisErr)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStartsRedis$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=redis")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q: %v", line, err)
	}
	var pid int
	var dir string
	if _, err := fmt.Sscan(line, &pid, &dir); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q: %v", line, err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if !alive(pid) {
		t.Fatalf("redis pid %d not running", pid)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if !waitAll([]int{pid}, 5*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("redis pid %d outlived its test binary", pid)
	}
	// The next start sweeps the directory the dead binary left behind.
	sweepStale(filepath.Dir(dir))
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("stale dir %s not swept: %v", dir, err)
	}
}

// TestFreePortBelowEphemeral: FreePort's ports lie below the kernel's ephemeral
// range, where no ":0" bind is ever given one, and are free to listen on.
func TestFreePortBelowEphemeral(t *testing.T) {
	lo := ephemeralLow()
	if lo <= 10000 {
		t.Skipf("ephemeral range starts at %d: nothing below it to draw from", lo)
	}
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < 10000 || port >= lo {
			t.Fatalf("FreePort = %d, want in [10000, %d)", port, lo)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		l.Close()
	}
}
