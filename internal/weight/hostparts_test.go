package weight

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestHostPartsBelowHost: the concerns moved out of host — the telemetry plumbing,
// the PreStop endpoint and its token — sit below it: they import neither host nor
// what host sequences (entrypoint, health, hooks), so host's own package holds the
// sequence alone.
func TestHostPartsBelowHost(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go: %v", err)
	}
	parts := []string{"internal/prestop", "internal/telemetry"}
	args := []string{"list", "-deps", "-f", `{{.ImportPath}}`}
	for _, p := range parts {
		args = append(args, module+"/"+p)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for dep := range strings.Lines(string(out)) {
		dep = strings.TrimSpace(dep)
		for _, above := range []string{"host", "entrypoint", "health", "hooks", "fleet", "lock"} {
			if dep == module+"/"+above || strings.HasPrefix(dep, module+"/"+above+"/") {
				t.Errorf("%v depend on %s", parts, above)
			}
		}
	}
	cmd = exec.Command(goBin, "list", "-f", `{{join .Imports " "}}`, module+"/host")
	cmd.Dir = "../.."
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list host: %v", err)
	}
	for _, p := range parts {
		if !slices.Contains(strings.Fields(string(out)), module+"/"+p) {
			t.Errorf("host does not import %s: the test no longer looks at what host uses", p)
		}
	}
}
