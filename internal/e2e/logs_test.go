package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/proctest"
	"github.com/servicewright/servicewright/internal/testenv"
)

// TestLogsJSONDuringRedisOutage: in JSON mode every line on stderr is a JSON object,
// go-redis's own included, while Redis dies under a running leader and comes back.
func TestLogsJSONDuringRedisOutage(t *testing.T) {
	r, err := testenv.StartRedis()
	testenv.Require(t, err)
	t.Cleanup(func() { _ = r.Stop() })
	probe := freeAddr(t)
	p := proctest.Start(t, bin, "PROBE_ADDR="+probe, "HTTP_ADDR="+freeAddr(t), "SW_LOG_LEVEL=debug",
		"SW_LOG_FORMAT=json", "REDIS_URL="+r.URL(), "EXAMPLE_LEADER_TTL=2s", "EXAMPLE_CAMPAIGN_EVERY=200ms")
	mustLog(t, p, map[string]string{"msg": "leadership: term started"}, 20*time.Second)

	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	mustLog(t, p, map[string]string{"msg": "leadership: no renewal succeeded in time; ending the term before the lease can lapse"}, 10*time.Second)
	// go-redis's own complaint about the dead server, through the Host's logger.
	mustLog(t, p, map[string]string{"logger": "redis", "level": "warn"}, 10*time.Second)
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	_ = p.Signal(syscall.SIGTERM)
	exitCode(t, p)

	lines := p.Lines()
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("a line on stderr is not a JSON object: %q", l)
		}
	}
	if len(lines) < 10 {
		t.Errorf("only %d lines on stderr", len(lines))
	}
}

// TestLogFormat: SW_LOG_FORMAT picks the encoding, and an unknown one exits 78 naming
// the variable, with nothing started.
func TestLogFormat(t *testing.T) {
	t.Run("console is one readable line per entry", func(t *testing.T) {
		// The failing entrypoint ends the run by itself, after the service was ready.
		p := proctest.Start(t, bin, "PROBE_ADDR="+freeAddr(t), "HTTP_ADDR="+freeAddr(t), "SW_LOG_FORMAT=console",
			"EXAMPLE_FAIL_AFTER=300ms")
		if code := exitCode(t, p); code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
		if !slices.ContainsFunc(p.Lines(), func(l string) bool { return strings.Contains(l, "service ready") }) {
			t.Fatalf("no console line saying the service is ready: %v", p.Lines())
		}
		if len(p.Entries()) != 0 {
			t.Errorf("%d JSON lines in console mode", len(p.Entries()))
		}
		for _, l := range p.Lines() {
			if strings.Contains(l, "service ready") && !strings.Contains(l, "INFO") {
				t.Errorf("console line without its level: %q", l)
			}
		}
	})
	t.Run("an unknown format exits 78 naming SW_LOG_FORMAT", func(t *testing.T) {
		p := proctest.Start(t, bin, "PROBE_ADDR="+freeAddr(t), "HTTP_ADDR="+freeAddr(t), "SW_LOG_FORMAT=xml")
		if code := exitCode(t, p); code != 78 {
			t.Fatalf("exit code %d, want 78", code)
		}
		if e := p.Find(map[string]string{"msg": "invalid configuration; nothing was started"}); e == nil ||
			!strings.Contains(fmt.Sprint(e["error"]), "SW_LOG_FORMAT") {
			t.Errorf("no JSON line naming SW_LOG_FORMAT: %v", p.Lines())
		}
	})
}
