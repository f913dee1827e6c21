package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// RedisOption changes how StartRedis starts the server.
type RedisOption func(*Redis)

// RedisBinary runs path instead of the redis-server found in PATH.
func RedisBinary(path string) RedisOption { return func(r *Redis) { r.bin = path } }

// RedisArgs appends arguments to the command line, e.g. "--maxmemory", "10mb".
func RedisArgs(args ...string) RedisOption {
	return func(r *Redis) { r.extra = append(r.extra, args...) }
}

// Redis is a redis-server child process on 127.0.0.1 with persistence off. Its methods
// are safe for concurrent use.
type Redis struct {
	bin   string
	extra []string
	dir   string
	port  int

	mu      sync.Mutex
	proc    *process
	stopped bool
}

const redisReadyTimeout = 10 * time.Second

// StartRedis starts redis-server on a free loopback port in a new temporary directory,
// with `--save "" --appendonly no`, and returns once it answers PING. When the binary is
// missing the error wraps ErrMissing.
func StartRedis(opts ...RedisOption) (*Redis, error) {
	r := &Redis{}
	for _, o := range opts {
		o(r)
	}
	if r.bin == "" {
		r.bin = "redis-server"
	}
	bin, err := exec.LookPath(r.bin)
	if err != nil {
		return nil, missing(r.bin, "redis-server")
	}
	r.bin = bin
	if r.dir, err = makeDir(os.TempDir(), "testenv-redis-*"); err != nil {
		return nil, fmt.Errorf("testenv: redis: %w", err)
	}
	// A port taken between FreePort and the bind is retried with another one.
	for attempt := 0; ; attempt++ {
		if r.port, err = FreePort(); err == nil {
			err = r.start()
		}
		if err == nil {
			return r, nil
		}
		if attempt == 4 || !strings.Contains(err.Error(), "in use") {
			_ = os.RemoveAll(r.dir)
			return nil, err
		}
	}
}

// Addr returns "127.0.0.1:PORT".
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// URL returns "redis://127.0.0.1:PORT/0".
func (r *Redis) URL() string { return "redis://" + r.Addr() + "/0" }

// Port returns the TCP port, which stays the same across Restart.
func (r *Redis) Port() int { return r.port }

// start runs the server on r.port and waits for PING. Called with mu held or before r
// is shared.
func (r *Redis) start() error {
	args := []string{
		"--port", strconv.Itoa(r.port),
		"--bind", "127.0.0.1",
		"--dir", r.dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "",
	}
	p, err := spawn(r.bin, append(args, r.extra...), filepath.Join(r.dir, "redis.log"), nil)
	if err != nil {
		return fmt.Errorf("testenv: redis: %w", err)
	}
	if err := waitRedis(p, r.Addr(), redisReadyTimeout); err != nil {
		_ = p.kill()
		log := p.logTail()
		if addrInUse(log) || strings.Contains(err.Error(), "address in use") {
			return fmt.Errorf("testenv: redis: port %d in use: %s", r.port, log)
		}
		return fmt.Errorf("testenv: redis: %w; output:\n%s", err, log)
	}
	r.proc = p
	return nil
}

func waitRedis(p *process, addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if !p.running() {
			return fmt.Errorf("redis-server exited before answering PING")
		}
		if pingRedis(addr) {
			// The answer must come from our child, not from a server that had the port.
			if pid := redisPID(addr); pid != p.pid() {
				return fmt.Errorf("port answered by another redis-server (pid %d), address in use", pid)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server did not answer PING within %s", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func pingRedis(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// redisPID asks the server at addr for its process id; 0 when it cannot tell.
func redisPID(addr string) int {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return 0
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_id:"); ok {
			pid, _ := strconv.Atoi(strings.TrimSpace(v))
			return pid
		}
	}
	return 0
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it to exit. Its
// data is lost. Kill on a server that is not running does nothing.
func (r *Redis) Kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return nil
	}
	if err := r.proc.kill(); err != nil {
		return fmt.Errorf("testenv: redis: %w", err)
	}
	return nil
}

// Restart starts the server again on the same port, empty (nothing is persisted), and
// returns once it answers PING. A server still running is first stopped with SIGTERM.
// After Stop, Restart returns ErrStopped. A port that some other process took in the
// meantime is retried for a few seconds, then reported.
func (r *Redis) Restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return ErrStopped
	}
	if r.proc != nil {
		if err := r.proc.stop(syscall.SIGTERM, 5*time.Second); err != nil {
			return fmt.Errorf("testenv: redis: %w", err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := r.start()
		if err == nil || !strings.Contains(err.Error(), "in use") || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop ends the server (SIGTERM, then SIGKILL after 5 s), waits for it to exit and
// removes its directory. It is idempotent; after it, Restart fails.
func (r *Redis) Stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	r.stopped = true
	var err error
	if r.proc != nil {
		err = r.proc.stop(syscall.SIGTERM, 5*time.Second)
	}
	if rmErr := os.RemoveAll(r.dir); err == nil {
		err = rmErr
	}
	if err != nil {
		return fmt.Errorf("testenv: redis stop: %w", err)
	}
	return nil
}
