package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTokenFileBounded: SW_PRESTOP_TOKEN_FILE naming something that is not a small
// regular file holding a sendable token — a device that never ends, a FIFO with no
// writer, a 1 GiB file, a directory, a token with a newline inside or longer than the
// probe port's header limit — exits 78 at once naming the variable: never a hang,
// never an unbounded read. Before, /dev/zero grew the process past 3 GB and a FIFO
// hung it before anything opened.
func TestTokenFileBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 1<<30); err != nil { // sparse: 1 GiB read as zeros
		t.Fatal(err)
	}
	newline := filepath.Join(dir, "newline")
	if err := os.WriteFile(newline, []byte("0123456789abcdef\n0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, "long")
	if err := os.WriteFile(long, []byte(strings.Repeat("a", 5000)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, why string }{
		{"/dev/zero", "/dev/zero", "not a regular file"},
		{"a FIFO with no writer", fifo, "not a regular file"},
		{"a 1 GiB file", huge, "file too large"},
		{"a directory", dir, "not a regular file"},
		{"a newline inside the token", newline, "visible ASCII"},
		{"a token above the header limit", long, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			p, _ := startExample(t, "SW_PRESTOP_TOKEN_FILE="+tc.path)
			code, err := p.Wait(10 * time.Second)
			if err != nil {
				t.Fatalf("no exit 10s after start: %v", err)
			}
			if code != 78 {
				t.Fatalf("exit %d, want 78", code)
			}
			out := strings.Join(p.Lines(), "\n")
			if !strings.Contains(out, "SW_PRESTOP_TOKEN_FILE") || !strings.Contains(out, tc.why) {
				t.Errorf("the error does not name SW_PRESTOP_TOKEN_FILE and %q:\n%s", tc.why, out)
			}
			t.Logf("%s: exit 78 after %s, peak RSS %d MiB", tc.name, time.Since(began).Round(time.Millisecond), p.PeakRSS()>>20)
		})
	}
}
