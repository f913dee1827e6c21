package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fenced returns the normalized lines of each ``` block of kind in the document.
func fenced(t *testing.T, path, kind string) [][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	var cur []string
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```"+kind:
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			out = append(out, cur)
			in = false
		case in:
			if s := normalize(line); s != "" {
				cur = append(cur, s)
			}
		}
	}
	return out
}

// uncommented is path's normalized lines without blank and # comment lines.
func uncommented(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if s := normalize(l); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
	}
	return out
}

// TestCodegenSnippets holds docs/grpc.md's copyable buf.yaml, buf.gen.yaml and Makefile
// target to the repository's own, so the pinned versions a user copies are the ones
// this repository generates with. The example's proto files and buf's two files live
// in cmd/example, and the Makefile runs buf there (a "cd cmd/example && " before the
// line a user's Makefile, run from the root of a module, has without it).
func TestCodegenSnippets(t *testing.T) {
	root := "../.."
	example := filepath.Join(root, "cmd", "example")
	readme := filepath.Join(root, "docs", "grpc.md")
	yaml := fenced(t, readme, "yaml")
	for _, f := range []string{"buf.yaml", "buf.gen.yaml"} {
		want := uncommented(t, filepath.Join(example, f))
		found := false
		for _, b := range yaml {
			found = found || strings.Join(b, "\n") == strings.Join(want, "\n")
		}
		if !found {
			t.Errorf("docs/grpc.md has no yaml block equal to %s", f)
		}
	}
	makefile := uncommented(t, filepath.Join(root, "Makefile"))
	for i, line := range makefile {
		makefile[i] = strings.Replace(line, "cd cmd/example && ", "", 1)
	}
	blocks := fenced(t, readme, "make")
	if len(blocks) == 0 {
		t.Fatal("docs/grpc.md has no make block")
	}
	for _, b := range blocks {
		for _, line := range b {
			if strings.HasPrefix(line, ".PHONY") || line == "GO ?= go" {
				continue
			}
			if !contains(makefile, []string{line}) {
				t.Errorf("docs/grpc.md's make block has %q, which the Makefile does not", line)
			}
		}
	}
}
