package e2e

import (
	"strings"
	"testing"

	"github.com/servicewright/servicewright/host"
)

// TestBadAddrProcessExit78: the built example exits 78 before binding anything, with
// a stderr line naming the variable, for each address variable.
func TestBadAddrProcessExit78(t *testing.T) {
	for _, kv := range []string{"HTTP_ADDR=not-an-address", "GRPC_ADDR=:70000", "PROBE_ADDR=localhost"} {
		p, _ := startExample(t, kv)
		if code := exitCode(t, p); code != host.ExitConfig {
			t.Errorf("%s: exit %d, want 78", kv, code)
		}
		if name := strings.SplitN(kv, "=", 2)[0]; !strings.Contains(strings.Join(p.Lines(), "\n"), name) {
			t.Errorf("%s: no stderr line names %s:\n%s", kv, name, strings.Join(p.Lines(), "\n"))
		}
	}
}

// TestKnobProcessExit78: the built example refuses absurd knobs at start with exit 78
// and a stderr line naming each.
func TestKnobProcessExit78(t *testing.T) {
	for _, kv := range []string{"EXAMPLE_PUBLISH_EVERY=0", "EXAMPLE_CRON_EVERY=1ns", "EXAMPLE_LEADER_TTL=0", "EXAMPLE_FAIL_AFTER=1ns"} {
		p, _ := startExample(t, kv)
		if code := exitCode(t, p); code != 78 {
			t.Errorf("%s: exit %d, want 78", kv, code)
		}
		if name := strings.SplitN(kv, "=", 2)[0]; !strings.Contains(strings.Join(p.Lines(), "\n"), name) {
			t.Errorf("%s: no stderr line names %s", kv, name)
		}
	}
}
