package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/host"
)

// buildBound is how long the Host lets a build go on after a stop signal before it
// abandons it: 5 s, as docs/operations.md states.
const buildBound = 5 * time.Second

// TestStopDuringBuild: SIGTERM while a container constructor is still running (the
// example's EXAMPLE_BUILD_DELAY) is handled from the start of Main. A build that
// returns soon after is followed by the orderly exit of a stop during startup — the
// signal logged, nothing started, the shutdown report, exit 0; one that does not
// return within buildBound is abandoned, logged, exit 1. Before, the
// handlers were installed only after New: SIGTERM killed the process with 143 and
// nothing logged.
func TestStopDuringBuild(t *testing.T) {
	t.Run("the build returns: the orderly exit, 0", func(t *testing.T) {
		p, _ := startExample(t, "EXAMPLE_BUILD_DELAY=2s")
		mustLog(t, p, map[string]string{"msg": "slow constructor: building"}, 20*time.Second)
		began := time.Now()
		_ = p.Signal(syscall.SIGTERM)
		if code := exitCode(t, p); code != 0 {
			t.Fatalf("exit %d after SIGTERM during the build, want 0", code)
		}
		if p.Find(map[string]string{"msg": "signal received while the container was being built; nothing was started, and the graceful shutdown begins",
			"signal": "SIGTERM"}) == nil {
			t.Error("the signal during the build is not logged")
		}
		if p.Find(map[string]string{"msg": "service ready"}) != nil {
			t.Error("the service started after a stop during the build")
		}
		if r := reportOf(t, p); r["result"] != "success" {
			t.Errorf("report %v, want success", r)
		}
		t.Logf("SIGTERM during a 2s constructor: exit 0 after %s", time.Since(began).Round(time.Millisecond))
	})
	t.Run("the build hangs: abandoned after the bound, 1", func(t *testing.T) {
		p, _ := startExample(t, "EXAMPLE_BUILD_DELAY=10m")
		mustLog(t, p, map[string]string{"msg": "slow constructor: building"}, 20*time.Second)
		began := time.Now()
		_ = p.Signal(syscall.SIGTERM)
		if code := exitCode(t, p); code != host.ExitFailure {
			t.Fatalf("exit %d after SIGTERM during a hung build, want %d", code, host.ExitFailure)
		}
		took := time.Since(began)
		if took < buildBound {
			t.Errorf("exit after %s, before the build's bound %s", took, buildBound)
		}
		out := strings.Join(p.Lines(), "\n")
		if !strings.Contains(out, "abandoning it") || !strings.Contains(out, `"signal":"SIGTERM"`) {
			t.Errorf("the abandoned build is not logged with its signal:\n%s", out)
		}
		t.Logf("SIGTERM during a hung constructor: exit %d after %s", host.ExitFailure, took.Round(time.Millisecond))
	})
}
