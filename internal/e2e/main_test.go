package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/proctest"
	"github.com/servicewright/servicewright/internal/testenv"
)

var (
	bin      string      // cmd/example
	naiveBin string      // internal/cmd/baseline: plain net/http, Shutdown on SIGTERM
	env      testenv.Env // real Redis and PostgreSQL, started once for the package
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "example-bin")
	if err != nil {
		panic(err)
	}
	// The embedded development broker (devbroker.go) is what most tests run on.
	bin, err = proctest.Build(dir, "github.com/servicewright/servicewright/cmd/example", "-tags=devbroker,e2e")
	if err == nil {
		naiveBin, err = proctest.Build(dir, "github.com/servicewright/servicewright/internal/cmd/baseline")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := testenv.Run(m, &env, testenv.WithRedis(), testenv.WithPostgres())
	os.RemoveAll(dir)
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := testenv.FreePort() // below the ephemeral range: no ":0" bind takes it
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// startExample runs the example with its probe listener on a free port and debug logs.
func startExample(t *testing.T, env ...string) (*proctest.Proc, string) {
	t.Helper()
	probe := freeAddr(t)
	env = append([]string{"PROBE_ADDR=" + probe, "HTTP_ADDR=" + freeAddr(t), "GRPC_ADDR=127.0.0.1:0", "SW_LOG_LEVEL=debug"}, env...)
	return proctest.Start(t, bin, env...), probe
}

func stage(s string) map[string]string { return map[string]string{"msg": "stage", "stage": s} }

func mustLog(t *testing.T, p *proctest.Proc, match map[string]string, timeout time.Duration) map[string]any {
	t.Helper()
	e, err := p.WaitLog(match, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func exitCode(t *testing.T, p *proctest.Proc) int {
	t.Helper()
	code, err := p.Wait(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func TestProcess(t *testing.T) {
	t.Run("SIGTERM exits 0 with the shutdown report", func(t *testing.T) {
		p, probe := startExample(t)
		mustLog(t, p, stage("serve"), 20*time.Second)
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("/readyz before stop: %v %v", resp, err)
		}
		resp.Body.Close()
		_ = p.Signal(syscall.SIGTERM)
		if code := exitCode(t, p); code != 0 {
			t.Fatalf("exit code %d, want 0", code)
		}
		rep := p.Find(map[string]string{"msg": "shutdown report"})
		if rep == nil || rep["result"] != "success" || fmt.Sprint(rep["exit_code"]) != "0" {
			t.Errorf("shutdown report = %v", rep)
		}
	})

	t.Run("SIGTERM during warmup exits promptly with 0 and binds nothing", func(t *testing.T) {
		// A warmup of 10 minutes: exitCode's 20 s wait ends long before it, so an exit
		// at all shows the warmup was cancelled, however slow the machine.
		p, _ := startExample(t, "EXAMPLE_WARMUP_DELAY=10m")
		mustLog(t, p, stage("warmup"), 20*time.Second)
		_ = p.Signal(syscall.SIGTERM)
		if code := exitCode(t, p); code != 0 {
			t.Fatalf("exit code %d, want 0", code)
		}
		if p.Find(stage("bind")) != nil || p.Find(map[string]string{"msg": "service ready"}) != nil {
			t.Error("the service bound or became ready after a stop during warmup")
		}
	})

	for _, c := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(fmt.Sprintf("a second %s while a hook blocks exits %d", c.sig, c.want), func(t *testing.T) {
			p, _ := startExample(t, "EXAMPLE_HOOK_DELAY=30s")
			mustLog(t, p, stage("serve"), 20*time.Second)
			_ = p.Signal(c.sig)
			mustLog(t, p, stage("pre_shutdown"), 20*time.Second)
			_ = p.Signal(c.sig)
			if code := exitCode(t, p); code != c.want {
				t.Fatalf("exit code %d, want %d", code, c.want)
			}
		})
	}

	t.Run("an essential entrypoint failing exits 1 and names it", func(t *testing.T) {
		p, _ := startExample(t, "EXAMPLE_FAIL_AFTER=200ms")
		if code := exitCode(t, p); code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
		e := p.Find(map[string]string{"msg": "essential entrypoint failed; shutting down"})
		if e == nil || e["entrypoint"] != "chaos" {
			t.Errorf("no log naming the entrypoint: %v", e)
		}
		rep := p.Find(map[string]string{"msg": "shutdown report"})
		if rep == nil || rep["result"] != "failure" || !strings.Contains(fmt.Sprint(rep["cause"]), "chaos") {
			t.Errorf("shutdown report = %v", rep)
		}
	})

	t.Run("a negative SW_DRAIN_DELAY exits 78 naming it, with nothing started", func(t *testing.T) {
		p, probe := startExample(t, "SW_DRAIN_DELAY=-1s")
		if code := exitCode(t, p); code != 78 {
			t.Fatalf("exit code %d, want 78", code)
		}
		if !strings.Contains(strings.Join(p.Lines(), "\n"), "SW_DRAIN_DELAY") {
			t.Error("the error does not name SW_DRAIN_DELAY")
		}
		if p.Find(stage("bootstrap")) != nil {
			t.Error("the service started a stage")
		}
		if c, err := net.Dial("tcp", probe); err == nil {
			c.Close()
			t.Error("the probe port was listening")
		}
	})
}
