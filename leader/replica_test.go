package leader

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/pgkit"
	"github.com/servicewright/servicewright/rediskit"
)

// The process tests run replicas as child processes of the test binary: TestMain
// runs replicaMain instead of the tests when replicaEnv is set. A replica leads
// with the backend and timings its environment names and writes its log to stdout
// as JSON lines with nanosecond timestamps, which the test reads.
const (
	replicaEnv  = "LEADER_TEST_REPLICA" // "pg", "redis", "etcd" or "kube"
	replicaURL  = "LEADER_TEST_URL"
	replicaKey  = "LEADER_TEST_KEY"
	replicaOwn  = "LEADER_TEST_OWNER"
	replicaFast = "LEADER_TEST_FAST" // "1": the short timings of fastSpec
	replicaPoll = "LEADER_TEST_POLL" // "1": Config.Poll
)

// fastSpec is the short timings of the partition tests: the backend may hand the
// lease over 2s after the last renewal (PostgreSQL: keepalives 1s + 1 × 1s, user
// timeout 2s, shorter than its 4s TTL, as at the default timings; Redis: TTL 2s),
// and a term ends 200+200+300ms before that.
func fastSpec(c Config, backend string) Config {
	c.TTL = 2 * time.Second
	if backend == "pg" {
		c.TTL = 4 * time.Second
	}
	c.CampaignEvery, c.RenewEvery = 200*time.Millisecond, 300*time.Millisecond
	c.YieldGrace, c.ReleaseTimeout, c.Margin = 200*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond
	return c
}

var fastDeadClient = pgkit.DeadClient{KeepaliveIdle: time.Second, KeepaliveInterval: time.Second, KeepaliveCount: 1, UserTimeout: 2 * time.Second}

// replicaMain is a replica process: it campaigns until SIGTERM, then drains.
func replicaMain() int {
	fast := os.Getenv(replicaFast) == "1"
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{TimeKey: "ts", MessageKey: "msg", LevelKey: "level",
		EncodeTime: zapcore.EpochNanosTimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder, EncodeDuration: zapcore.StringDurationEncoder})
	log := zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stdout), zap.DebugLevel))
	var (
		lk        lock.Lock
		closeLock func()
	)
	switch b := os.Getenv(replicaEnv); b {
	case "pg":
		cfg := pgkit.LockConfig{URL: os.Getenv(replicaURL)}
		if fast {
			cfg.DeadClient = fastDeadClient
		}
		pl, err := pgkit.NewLock(cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		lk, closeLock = pl, func() { _ = pl.Close(context.Background()) }
	case "redis":
		opt, err := redis.ParseURL(os.Getenv(replicaURL))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.MaxRetries = 250*time.Millisecond, 250*time.Millisecond, 250*time.Millisecond, -1
		c := redis.NewClient(opt)
		rl, err := rediskit.NewLock(c, rediskit.LockConfig{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		lk, closeLock = rl, func() { _ = c.Close() }
	case "etcd":
		el, closeClient, err := openEtcdLock(strings.Split(os.Getenv(replicaURL), ","))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		lk, closeLock = el, closeClient
	case "kube":
		kl, err := openKubeLock(os.Getenv(replicaURL))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		lk, closeLock = kl, func() {}
	default:
		fmt.Fprintf(os.Stderr, "unknown backend %q\n", b)
		return 2
	}
	defer closeLock()
	cfg := Config{Lock: lk, Key: os.Getenv(replicaKey), Owner: os.Getenv(replicaOwn)}
	if fast {
		cfg = fastSpec(cfg, os.Getenv(replicaEnv))
	}
	if os.Getenv(replicaPoll) == "1" {
		cfg.Poll = true
	}
	l, err := New(cfg, func(ctx context.Context, term *Term) error {
		<-term.Ended()
		return nil
	}, WithTelemetry(entrypoint.Telemetry{Logger: log}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 78
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	if err := l.Bind(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- l.Serve(context.Background(), stop) }()
	log.Info("replica: serving")
	<-ctx.Done()
	close(stop)
	<-served
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	_ = l.Drain(dctx)
	if err := l.Stop(dctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// event is one line of a replica's log.
type event struct {
	Msg   string `json:"msg"`
	TS    int64  `json:"ts"`
	Token uint64 `json:"token"`
	Why   string `json:"reason"`
	at    time.Time
}

// replicaProc is a running replica process and the log lines it wrote.
type replicaProc struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []event
	more  chan struct{} // a line arrived (one pending signal)
	done  chan struct{} // stdout is closed
}

// startReplicaProc runs cmd (the test binary, maybe through ip netns exec) as a
// replica of backend at url, killed when t ends.
func startReplicaProc(t *testing.T, cmd *exec.Cmd, name, backend, url, key string, fast bool) *replicaProc {
	t.Helper()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, replicaEnv+"="+backend, replicaURL+"="+url, replicaKey+"="+key, replicaOwn+"="+name,
		replicaFast+"="+map[bool]string{true: "1", false: "0"}[fast])
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &replicaProc{t: t, name: name, cmd: cmd, more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			e.at = time.Unix(0, e.TS)
			p.mu.Lock()
			p.lines = append(p.lines, e)
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

// kill ends the process with SIGKILL and waits for it.
func (p *replicaProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	_ = p.cmd.Wait()
}

// stop ends the process with SIGTERM (a drain) and waits for it.
func (p *replicaProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.t.Errorf("%s did not exit within 15s of SIGTERM", p.name)
	}
	p.kill()
}

// await returns the first line with msg after index from, waiting up to within.
func (p *replicaProc) await(msg string, from int, within time.Duration) (event, int) {
	p.t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	exited := false
	for {
		p.mu.Lock()
		for i := from; i < len(p.lines); i++ {
			if p.lines[i].Msg == msg {
				e := p.lines[i]
				p.mu.Unlock()
				return e, i
			}
		}
		p.mu.Unlock()
		if exited {
			p.t.Fatalf("%s exited without logging %q", p.name, msg)
		}
		select {
		case <-p.more:
		case <-p.done:
			exited = true // read what is left once more
		case <-deadline.C:
			p.t.Fatalf("%s did not log %q within %v", p.name, msg, within)
		}
	}
}
