package main

import (
	"encoding/json"
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
