package doccheck

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// block is one ```go block of a document.
type block struct {
	doc   string
	line  int
	lines []string // trimmed, without blank lines
}

func goBlocks(t *testing.T, path string) []block {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &block{doc: path, line: n}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			if s := normalize(line); s != "" {
				cur.lines = append(cur.lines, s)
			}
		}
	}
	return out
}

// normalize trims a line and folds runs of white space, so alignment differences
// between gofmt'd code and the docs do not matter.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// goSources returns every Go file of the repository, each as normalized non-blank lines.
func goSources(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var lines []string
		for _, l := range strings.Split(string(raw), "\n") {
			if s := normalize(l); s != "" {
				lines = append(lines, s)
			}
		}
		out[path] = lines
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func contains(haystack, needle []string) bool {
	for i := 0; i+len(needle) <= len(haystack); i++ {
		match := true
		for j := range needle {
			if haystack[i+j] != needle[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func TestDocsAreCompiled(t *testing.T) {
	root := "../.."
	docs := []string{filepath.Join(root, "README.md")}
	more, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, more...)
	sources := goSources(t, root)
	total := 0
	for _, doc := range docs {
		for _, b := range goBlocks(t, doc) {
			total++
			found := ""
			for path, lines := range sources {
				if contains(lines, b.lines) {
					found = path
					break
				}
			}
			if found == "" {
				t.Errorf("%s:%d: this go block is not in any compiled Go file; put it in internal/doccheck/snippets_test.go or an Example", b.doc, b.line)
			}
		}
	}
	if total == 0 {
		t.Fatal("no go blocks found: the check would prove nothing")
	}
	t.Logf("%d go blocks checked against compiled code", total)
}
