package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOperatorLines checks that every exit an operator may have to explain leaves a
// line on stderr saying why.
func TestOperatorLines(t *testing.T) {
	t.Run("an invalid SW_LOG_LEVEL exits 78 with a line naming it, though no logger could be built", func(t *testing.T) {
		p, _ := startExample(t, "SW_LOG_LEVEL=verbose")
		if code := exitCode(t, p); code != 78 {
			t.Fatalf("exit code %d, want 78", code)
		}
		e := p.Find(map[string]string{"msg": "invalid configuration; nothing was started"})
		if e == nil || !strings.Contains(fmt.Sprint(e["error"]), "SW_LOG_LEVEL") {
			t.Errorf("no line naming SW_LOG_LEVEL on stderr: %q", p.Lines())
		}
	})

	for _, c := range []struct {
		sig  syscall.Signal
		name string
		want int
	}{{syscall.SIGTERM, "SIGTERM", 143}, {syscall.SIGINT, "SIGINT", 130}} {
		// The second signal exits without touching the logger (the output may be what
		// hangs): the first one's line already says a second exits at once.
		t.Run(fmt.Sprintf("the first %s is logged by name, the second exits %d at once", c.name, c.want), func(t *testing.T) {
			p, _ := startExample(t, "EXAMPLE_HOOK_DELAY=30s")
			mustLog(t, p, stage("serve"), 20*time.Second)
			_ = p.Signal(c.sig)
			first := mustLog(t, p, map[string]string{"signal": c.name}, 10*time.Second)
			if msg := fmt.Sprint(first["msg"]); !strings.Contains(msg, "graceful shutdown") || !strings.Contains(msg, "a second one exits at once") {
				t.Errorf("first signal line = %v", first)
			}
			mustLog(t, p, stage("pre_shutdown"), 20*time.Second)
			_ = p.Signal(c.sig)
			if code := exitCode(t, p); code != c.want {
				t.Fatalf("exit code %d, want %d", code, c.want)
			}
			if p.Find(map[string]string{"msg": "shutdown report"}) != nil {
				t.Errorf("a shutdown report after the second signal: the exit was not at once")
			}
		})
	}
}
