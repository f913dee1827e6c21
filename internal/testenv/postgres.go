package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// PostgresOption changes how StartPostgres starts the server.
type PostgresOption func(*Postgres)

// PostgresBinDir uses the initdb and postgres binaries in dir instead of searching
// PATH and /usr/lib/postgresql/*/bin.
func PostgresBinDir(dir string) PostgresOption { return func(p *Postgres) { p.binDir = dir } }

// Postgres is a PostgreSQL server child process on 127.0.0.1 with a fresh cluster
// (trust authentication, superuser "postgres", fsync off: a killed server keeps
// committed data, a crashed machine would not). Its methods are safe for
// concurrent use.
type Postgres struct {
	binDir string
	root   string // temporary directory holding data/, sock/ and postgres.log
	port   int
	cred   *syscall.Credential // the postgres user's, when running as root
	listen []string            // addresses besides 127.0.0.1 (PostgresListen)

	mu      sync.Mutex
	proc    *process
	stopped bool
}

const postgresReadyTimeout = 30 * time.Second

// StartPostgres creates a cluster with initdb in a new temporary directory, starts the
// server on a free loopback port and returns once it accepts a connection. Under root
// the server runs as the "postgres" user. When the binaries are missing the error wraps
// ErrMissing.
func StartPostgres(opts ...PostgresOption) (*Postgres, error) {
	pg := &Postgres{}
	for _, o := range opts {
		o(pg)
	}
	if err := pg.findBinaries(); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, missing(`the "postgres" user`, "postgresql")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		pg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if err := pg.initdb(); err != nil {
		_ = os.RemoveAll(pg.root)
		return nil, fmt.Errorf("testenv: postgres: %w", err)
	}
	for attempt := 0; ; attempt++ {
		var err error
		if pg.port, err = FreePort(); err == nil {
			err = pg.start()
		}
		if err == nil {
			return pg, nil
		}
		if attempt == 4 || !strings.Contains(err.Error(), "in use") {
			_ = os.RemoveAll(pg.root)
			return nil, err
		}
	}
}

func (pg *Postgres) findBinaries() error {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if pg.binDir != "" {
		if !has(pg.binDir) {
			return missing("initdb and postgres in "+pg.binDir, "postgresql")
		}
		return nil
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		pg.binDir = filepath.Dir(p)
		return nil
	}
	// Debian keeps the server binaries out of PATH, one folder per major version.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, d := range dirs {
		if has(d) {
			pg.binDir = d
			return nil
		}
	}
	return missing("initdb and postgres (PostgreSQL server)", "postgresql")
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func (pg *Postgres) initdb() error {
	base := os.TempDir()
	if pg.cred != nil && !traversable(base) {
		base = "/tmp"
	}
	var err error
	if pg.root, err = makeDir(base, "testenv-postgres-*"); err != nil {
		return err
	}
	// MkdirTemp makes 0700; the postgres user must be able to reach data/ and sock/.
	if err := os.Chmod(pg.root, 0o755); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		mode os.FileMode
	}{{"data", 0o700}, {"sock", 0o755}} {
		p := filepath.Join(pg.root, d.name)
		if err := os.Mkdir(p, d.mode); err != nil {
			return err
		}
		if pg.cred != nil {
			if err := os.Chown(p, int(pg.cred.Uid), int(pg.cred.Gid)); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(pg.binDir, "initdb"),
		"-D", pg.dataDir(), "--no-sync", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = sysProcAttr(pg.cred)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w; output:\n%s", err, out)
	}
	return pg.allowListen()
}

// traversable reports whether every folder from dir up to / can be entered by others.
func traversable(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func (pg *Postgres) dataDir() string { return filepath.Join(pg.root, "data") }

// DSN returns "postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable".
func (pg *Postgres) DSN() string {
	return "postgres://postgres@" + net.JoinHostPort("127.0.0.1", strconv.Itoa(pg.port)) + "/postgres?sslmode=disable"
}

// Port returns the TCP port, which stays the same across Restart.
func (pg *Postgres) Port() int { return pg.port }

// start runs the server on pg.port and waits for a connection. Called with mu held or
// before pg is shared.
func (pg *Postgres) start() error {
	args := []string{
		"-D", pg.dataDir(),
		"-p", strconv.Itoa(pg.port),
		"-k", filepath.Join(pg.root, "sock"),
		"-c", "listen_addresses=" + strings.Join(append([]string{"127.0.0.1"}, pg.listen...), ","),
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB",
	}
	p, err := spawn(filepath.Join(pg.binDir, "postgres"), args, filepath.Join(pg.root, "postgres.log"), pg.cred)
	if err != nil {
		return fmt.Errorf("testenv: postgres: %w", err)
	}
	if err := waitPostgres(p, pg.DSN(), postgresReadyTimeout); err != nil {
		_ = killPostgres(p)
		log := p.logTail()
		if addrInUse(log) {
			return fmt.Errorf("testenv: postgres: port %d in use: %s", pg.port, log)
		}
		return fmt.Errorf("testenv: postgres: %w; output:\n%s", err, log)
	}
	pg.proc = p
	return nil
}

func waitPostgres(p *process, dsn string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if !p.running() {
			return errors.New("postgres exited before accepting connections")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgconn.Connect(ctx, dsn)
		if err == nil {
			err = c.Close(ctx)
			cancel()
			return err
		}
		cancel()
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept a connection within %s: %w", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killPostgres SIGKILLs the postmaster and its children (each child runs in its own
// session, so the process group holds only the postmaster), then waits until they are
// gone: a restart refuses to start while an old child still holds the shared memory.
func killPostgres(p *process) error {
	kids := children(p.pid())
	err := p.kill()
	for _, k := range kids {
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	if !waitAll(kids, 10*time.Second) {
		err = errors.Join(err, errors.New("postgres children still alive 10s after SIGKILL"))
	}
	return err
}

// stopPostgres asks for a fast shutdown (SIGINT: disconnect clients, checkpoint, exit)
// and kills after grace.
func stopPostgres(p *process, grace time.Duration) error {
	if err := p.signal(syscall.SIGINT); err != nil {
		return err
	}
	if p.waitExit(grace) {
		return nil
	}
	return killPostgres(p)
}

// Kill ends the server and its children with SIGKILL, as a crash would, and waits for
// them to exit. The cluster stays on disk; Restart recovers it. Kill on a server that
// is not running does nothing.
func (pg *Postgres) Kill() error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.proc == nil || !pg.proc.running() {
		return nil
	}
	if err := killPostgres(pg.proc); err != nil {
		return fmt.Errorf("testenv: postgres: %w", err)
	}
	return nil
}

// Shutdown stops the server as an operator would (fast mode: clients are
// disconnected and their open transactions rolled back; SIGKILL after 10 s) and waits
// for it to exit. The cluster stays on disk; Restart starts it again. Shutdown on a
// server that is not running does nothing.
func (pg *Postgres) Shutdown() error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.proc == nil || !pg.proc.running() {
		return nil
	}
	if err := stopPostgres(pg.proc, 10*time.Second); err != nil {
		return fmt.Errorf("testenv: postgres: %w", err)
	}
	return nil
}

// Restart starts the server again on the same port with the same cluster (after a Kill
// it runs crash recovery first) and returns once it accepts a connection. A server
// still running is first shut down (fast mode). After Stop, Restart returns ErrStopped.
// A start refused because the port or the old shared memory is still held is retried
// for up to 10 s.
func (pg *Postgres) Restart() error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.stopped {
		return ErrStopped
	}
	if pg.proc != nil && pg.proc.running() {
		if err := stopPostgres(pg.proc, 10*time.Second); err != nil {
			return fmt.Errorf("testenv: postgres: %w", err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := pg.start()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		msg := err.Error()
		if !strings.Contains(msg, "in use") && !strings.Contains(msg, "already exists") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop shuts the server down (fast mode; SIGKILL after 10 s), waits for it to exit and
// removes its directory. It is idempotent; after it, Restart fails.
func (pg *Postgres) Stop() error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.stopped {
		return nil
	}
	pg.stopped = true
	var err error
	if pg.proc != nil && pg.proc.running() {
		err = stopPostgres(pg.proc, 10*time.Second)
	}
	if rmErr := os.RemoveAll(pg.root); err == nil {
		err = rmErr
	}
	if err != nil {
		return fmt.Errorf("testenv: postgres stop: %w", err)
	}
	return nil
}
