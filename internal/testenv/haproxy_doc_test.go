package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The HAProxy configuration docs/operations.md gives for a local fleet is the one the
// rolling-restart tests run.
func TestHAProxyConfigDocumented(t *testing.T) {
	raw, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(raw), "```haproxy\n")
	if !ok {
		t.Fatal("docs/operations.md has no haproxy block")
	}
	block, _, _ = strings.Cut(block, "```")
	want := HAProxyConfig([]Backend{
		{Name: "r1", Addr: "127.0.0.1:8081", ProbePort: 8071},
		{Name: "r2", Addr: "127.0.0.1:8082", ProbePort: 8072},
	}, 250*time.Millisecond, 8080, 8404)
	if block != want {
		t.Errorf("docs/operations.md's haproxy block differs from HAProxyConfig:\n--- docs\n%s--- code\n%s", block, want)
	}
}

// HAProxyTCP's configuration balances connections, front and back, and haproxy
// accepts it.
func TestHAProxyTCPConfig(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not installed")
	}
	cfg := HAProxyConfig([]Backend{{Name: "r1", Addr: "127.0.0.1:8081", ProbePort: 8071}}, 250*time.Millisecond, 8080, 8404, HAProxyTCP())
	if n := strings.Count(cfg, "\n  mode tcp\n"); n != 2 {
		t.Errorf("%d sections in mode tcp, want the frontend and the backend:\n%s", n, cfg)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput(); err != nil {
		t.Errorf("haproxy -c refuses the configuration: %v\n%s\n%s", err, out, cfg)
	}
}
