package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const ownerFile = "owner.pid"

// makeDir creates a temporary directory for one server and records the test binary's
// pid in it. Before that it removes the directories that earlier binaries left behind
// when they died without Stop (a panic, a timeout, SIGKILL): their servers died with
// them, but a PostgreSQL cluster is tens of megabytes.
func makeDir(base, prefix string) (string, error) {
	sweepStale(base)
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// sweepStale removes base/testenv-* directories whose owner process is gone. One
// without an owner file (being created right now) is left alone.
func sweepStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "testenv-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}
