package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/testenv"
)

// TestWarmupNamesBackend: PostgreSQL that accepts connections and never answers (a
// black hole) holds the schema warmup steps; within a few seconds the log names each
// step and its backend — "postgres 127.0.0.1:<port>", never the URL's password — and
// SIGTERM still exits 0. Before, the log said nothing for the whole warmup budget
// (60 s), then named the step alone.
func TestWarmupNamesBackend(t *testing.T) {
	addr := testenv.BlackHole(t)
	p, _ := startExample(t, "DATABASE_URL=postgres://orders:s3cret@"+addr+"/orders?sslmode=disable", "REDIS_URL=")
	began := time.Now()
	line := mustLog(t, p, map[string]string{"msg": "warmup step has not answered yet; still waiting"}, 20*time.Second)
	if line["backend"] != "postgres "+addr {
		t.Errorf("waiting line %v, want backend %q", line, "postgres "+addr)
	}
	t.Logf("the first waiting line %s after start: %v", time.Since(began).Round(time.Millisecond), line)
	_ = p.Signal(syscall.SIGTERM)
	if code := exitCode(t, p); code != 0 {
		t.Errorf("exit %d after SIGTERM during warmup, want 0", code)
	}
	if out := strings.Join(p.Lines(), "\n"); strings.Contains(out, "s3cret") {
		t.Error("the database password reached the log")
	}
}
