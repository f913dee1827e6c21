package safe_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/internal/safe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadFile: a regular file within the cap is read; a device, a FIFO with no
// writer, a directory or a file above the cap is refused at once, by kind.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "token")
	if err := os.WriteFile(small, []byte("0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 4097)), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := safe.ReadFile(small, 4096)
	if err != nil || string(b) != "0123456789abcdef\n" {
		t.Fatalf("regular file: %q, %v", b, err)
	}
	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"a device that never ends", "/dev/zero", safe.ErrNotRegular},
		{"a FIFO with no writer", fifo, safe.ErrNotRegular},
		{"a directory", dir, safe.ErrNotRegular},
		{"a file above the cap", big, safe.ErrTooLarge},
		{"a missing file", filepath.Join(dir, "missing"), os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := safe.ReadFile(tc.path, 4096)
			if !errors.Is(err, tc.want) || b != nil {
				t.Fatalf("ReadFile(%s) = %d bytes, %v; want %v", tc.path, len(b), err, tc.want)
			}
			if strings.Contains(err.Error(), tc.path) {
				t.Errorf("the error repeats the path: %v", err)
			}
		})
	}
}
