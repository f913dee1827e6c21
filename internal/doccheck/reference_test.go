package doccheck

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/reference.md from the code instead of comparing")

// TestReferenceIsCurrent holds docs/reference.md to what the code gives: a renamed
// field, a changed default or variable, a new metric or exit code fails it until the
// page is regenerated.
func TestReferenceIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "reference.md")
	want, err := Reference(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("docs/reference.md:%d differs from the code:\n have: %s\n want: %s\nregenerate it: go run ./internal/cmd/refgen (or go test ./internal/doccheck -run TestReferenceIsCurrent -update)", i+1, gl, wl)
		}
	}
}
