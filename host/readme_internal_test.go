package host

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/servicewright/servicewright/fault"
)

// exitCodes are the package's exit-code constants by name. A constant declared in
// the package but missing here fails TestREADMETables: add it here and to docs/concepts.md.
var exitCodes = map[string]int{
	"ExitOK": ExitOK, "ExitFailure": ExitFailure, "ExitQuit": ExitQuit, "ExitPermanent": ExitPermanent,
	"ExitInterrupted": ExitInterrupted, "ExitConfig": ExitConfig, "ExitSignal": ExitSignal,
}

// results are the Result constants by name, with the error Run returns for each.
var results = map[string]struct {
	r   Result
	err error
}{
	"ResultSuccess":     {ResultSuccess, nil},
	"ResultTimeout":     {ResultTimeout, ErrShutdownTimeout},
	"ResultFailure":     {ResultFailure, ErrCleanupFailed},
	"ResultInterrupted": {ResultInterrupted, fault.ErrInterrupted},
}

// TestREADMETables holds the exit-code and result tables to the code: each
// row names a constant and its value, every constant has a row, and every exit code
// in a table of docs/concepts.md or docs/operations.md is one the code declares.
func TestREADMETables(t *testing.T) {
	declared := declaredConsts(t)
	for _, name := range declared["exit"] {
		if _, ok := exitCodes[name]; !ok {
			t.Errorf("exit code %s is declared but not in this test's list (nor, probably, in docs/concepts.md)", name)
		}
	}
	for _, name := range declared["result"] {
		if _, ok := results[name]; !ok {
			t.Errorf("Result %s is declared but not in this test's list (nor, probably, in docs/concepts.md)", name)
		}
	}

	tables := readTables(t, "../docs/concepts.md")
	exitTable := tables.under("## Exit codes", "code")
	if exitTable == nil {
		t.Fatal("docs/concepts.md has no exit-code table under ## Exit codes")
	}
	seen := map[string]bool{}
	for _, row := range exitTable {
		name := constName(row[1])
		want, ok := exitCodes[name]
		if !ok {
			t.Errorf("README exit-code row %q names %q, not an exit-code constant", row[0], row[1])
			continue
		}
		seen[name] = true
		if got := codeOf(row[0]); got != want {
			t.Errorf("README says %s is %q; the code says %d", name, row[0], want)
		}
	}
	for name := range exitCodes {
		if !seen[name] {
			t.Errorf("README's exit-code table has no row for host.%s (%d)", name, exitCodes[name])
		}
	}

	resultTable := tables.under("## Exit codes", "result")
	if resultTable == nil {
		t.Fatal("docs/concepts.md has no result table under ## Exit codes")
	}
	seen = map[string]bool{}
	for _, row := range resultTable {
		name := constName(row[1])
		want, ok := results[name]
		if !ok {
			t.Errorf("README result row %q names %q, not a Result", row[0], row[1])
			continue
		}
		seen[name] = true
		if word := strings.Trim(row[0], "`"); word != want.r.String() {
			t.Errorf("README calls host.%s %q; its String is %q", name, word, want.r)
		}
		if code := ExitCode(want.err); firstNumber(row[2]) != code {
			t.Errorf("README gives result %s exit code %q; Run's error for it exits %d", want.r, row[2], code)
		}
	}
	for name := range results {
		if !seen[name] {
			t.Errorf("README's result table has no row for host.%s", name)
		}
	}

	valid := map[int]bool{}
	for _, c := range exitCodes {
		valid[c] = true
	}
	for _, file := range []string{"../docs/concepts.md", "../docs/operations.md"} {
		for _, tab := range readTables(t, file) {
			if len(tab.header) == 0 || tab.header[0] != "code" {
				continue
			}
			for _, row := range tab.rows {
				if c := codeOf(row[0]); c < 0 || !valid[c] {
					t.Errorf("%s lists exit code %q, which the code does not declare", file, row[0])
				}
			}
		}
	}
}

// declaredConsts parses the package's sources for the constants named Exit… and
// those of type Result.
func declaredConsts(t *testing.T) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			inResult := false
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok {
					inResult = id.Name == "Result"
				} else if vs.Type != nil || len(vs.Values) > 0 {
					inResult = false
				}
				for _, n := range vs.Names {
					switch {
					case strings.HasPrefix(n.Name, "Exit") && n.IsExported():
						out["exit"] = append(out["exit"], n.Name)
					case inResult:
						out["result"] = append(out["result"], n.Name)
					}
				}
			}
		}
	}
	if len(out["exit"]) == 0 || len(out["result"]) == 0 {
		t.Fatalf("found no exit codes or results in the sources: %v", out)
	}
	return out
}

type table struct {
	section string // the last "## " heading above it
	header  []string
	rows    [][]string
}

type tables []table

// under is the rows of the first table in section whose first header cell is first.
func (ts tables) under(section, first string) [][]string {
	for _, tab := range ts {
		if tab.section == section && len(tab.header) > 0 && tab.header[0] == first {
			return tab.rows
		}
	}
	return nil
}

// readTables reads every Markdown table of file, with the section it is in.
func readTables(t *testing.T, file string) tables {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out     tables
		section string
		cur     *table
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			section = line
		}
		if !strings.HasPrefix(line, "|") {
			cur = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case cur == nil:
			out = append(out, table{section: section, header: cells})
			cur = &out[len(out)-1]
		case strings.HasPrefix(cells[0], "---"):
		default:
			cur.rows = append(cur.rows, cells)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// constName is "ExitOK" for "`host.ExitOK`".
func constName(cell string) string {
	return strings.TrimPrefix(strings.Trim(cell, "` "), "host.")
}

var number = regexp.MustCompile(`\d+`)

// codeOf reads an exit-code cell: "78", "128+n" (ExitSignal), "3 (`host.…`)", "130 / 143"
// (each a second signal: their base); -1 when it holds none.
func codeOf(cell string) int {
	if strings.HasPrefix(cell, "128+") {
		return ExitSignal
	}
	n := firstNumber(cell)
	if n > ExitSignal && n < ExitSignal+65 {
		return ExitSignal
	}
	return n
}

func firstNumber(cell string) int {
	m := number.FindString(cell)
	if m == "" {
		return -1
	}
	n, err := strconv.Atoi(m)
	if err != nil {
		return -1
	}
	return n
}
