package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/host"
)

// TestSignalsOnPurpose: SIGHUP is a logged graceful stop (exit 0 and the shutdown
// report); SIGQUIT is left to Go's runtime: every goroutine's stack on stderr and
// exit 2 at once, no report.
func TestSignalsOnPurpose(t *testing.T) {
	t.Run("SIGHUP", func(t *testing.T) {
		p, _ := startExample(t)
		mustLog(t, p, stage("serve"), 20*time.Second)
		_ = p.Signal(syscall.SIGHUP)
		if code := exitCode(t, p); code != 0 {
			t.Fatalf("exit %d after SIGHUP, want 0", code)
		}
		if p.Find(map[string]string{"msg": "signal received; beginning the graceful shutdown (a second one exits at once)", "signal": "SIGHUP"}) == nil {
			t.Error("SIGHUP not logged by name")
		}
		if r := reportOf(t, p); r["result"] != "success" {
			t.Errorf("report %v", r)
		}
	})
	t.Run("SIGQUIT", func(t *testing.T) {
		p, _ := startExample(t)
		mustLog(t, p, stage("serve"), 20*time.Second)
		_ = p.Signal(syscall.SIGQUIT)
		if code := exitCode(t, p); code != host.ExitQuit {
			t.Fatalf("exit %d after SIGQUIT, want %d", code, host.ExitQuit)
		}
		out := strings.Join(p.Lines(), "\n")
		if !strings.Contains(out, "SIGQUIT") || !strings.Contains(out, "goroutine ") {
			t.Error("no goroutine dump after SIGQUIT")
		}
		if p.Find(map[string]string{"msg": "shutdown report"}) != nil {
			t.Error("a shutdown report after SIGQUIT: it is not a graceful stop")
		}
	})
}
