package doccheck

import (
	"go/ast"
	"go/doc"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameOnlyPublicAPI reads every public package's documentation as the Go
// reference shows it (go/doc: the package comment, every exported declaration's
// and every exported field's comment) and fails on a name a reader cannot follow
// there: a path under internal/, a name of an internal package (transport.X), or
// pkg.name where pkg is one of the module's public packages and name is not one of
// its exported names (unexported, or gone).
func TestDocsNameOnlyPublicAPI(t *testing.T) {
	root := filepath.Join("..", "..")
	pkgs, err := configPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	internal := map[string]bool{}
	entries, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			internal[e.Name()] = true
		}
	}
	// The exported names of each public package, by its name; two packages of one
	// name share the entry.
	exported := map[string]map[string]bool{}
	docs := map[string]*doc.Package{}
	for _, p := range pkgs {
		d, err := doc.NewFromFiles(p.fset, p.files, p.path, doc.PreserveAST)
		if err != nil {
			t.Fatal(err)
		}
		docs[p.path] = d
		names := exported[p.name]
		if names == nil {
			names = map[string]bool{}
			exported[p.name] = names
		}
		for _, f := range p.files {
			for n, o := range f.Scope.Objects {
				if token.IsExported(n) && o.Kind != ast.Bad {
					names[n] = true
				}
			}
		}
	}
	ref := regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Za-z_][A-Za-z0-9_]*)`)
	path := regexp.MustCompile(`\binternal/[a-z0-9/]+`)
	// pending are the findings whose fix is under way in a file this package does
	// not own: reported by a skip, not hidden; once fixed, the entry must go.
	pending := map[string]bool{}
	checked := 0
	for _, p := range pkgs {
		for _, c := range comments(p.fset, docs[p.path]) {
			checked++
			text := strings.Join(strings.Fields(c.text), " ")
			for _, m := range path.FindAllString(text, -1) {
				t.Errorf("%s: %s's doc names %s, which users cannot import", p.path, c.of, m)
			}
			for _, m := range ref.FindAllStringSubmatch(text, -1) {
				pkg, name := m[1], m[2]
				switch {
				case internal[pkg] && exported[pkg] == nil:
					if key := strings.TrimPrefix(p.path, Module+"/") + "/" + c.file + ": " + c.of + " names " + m[0]; hasKey(pending, key) {
						pending[key] = true
						continue
					}
					t.Errorf("%s: %s's doc names %s.%s, of the internal package %s", p.path, c.of, pkg, name, pkg)
				case exported[pkg] != nil && !exported[pkg][name] && !token.IsExported(name) && pkg != p.name:
					t.Errorf("%s: %s's doc names %s.%s, not an exported name of %s", p.path, c.of, pkg, name, pkg)
				case exported[pkg] != nil && token.IsExported(name) && !exported[pkg][name]:
					t.Errorf("%s: %s's doc names %s.%s, which package %s does not declare", p.path, c.of, pkg, name, pkg)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d doc comments read: the check would prove little", checked)
	}
	for key, seen := range pending {
		if !seen {
			t.Errorf("%s: fixed; remove it from pending", key)
		} else if !t.Failed() {
			t.Skipf("everything else passes; pending the fix in a file doccheck does not own: %s", key)
		}
	}
}

func hasKey(m map[string]bool, k string) bool { _, ok := m[k]; return ok }

type comment struct{ of, file, text string }

// comments are the doc comments of d as the Go reference shows them, with the
// comments of exported fields of its exported struct types.
func comments(fset *token.FileSet, d *doc.Package) []comment {
	file := func(n ast.Node) string { return filepath.Base(fset.Position(n.Pos()).Filename) }
	out := []comment{{"package " + d.Name, "doc.go", d.Doc}}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			out = append(out, comment{strings.Join(v.Names, ", "), file(v.Decl), v.Doc})
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			name := f.Name
			if f.Recv != "" {
				name = strings.TrimLeft(f.Recv, "*") + "." + name
			}
			out = append(out, comment{name, file(f.Decl), f.Doc})
		}
	}
	values(d.Consts)
	values(d.Vars)
	funcs(d.Funcs)
	for _, ty := range d.Types {
		out = append(out, comment{ty.Name, file(ty.Decl), ty.Doc})
		values(ty.Consts)
		values(ty.Vars)
		funcs(ty.Funcs)
		funcs(ty.Methods)
		if st, ok := ty.Decl.Specs[0].(*ast.TypeSpec).Type.(*ast.StructType); ok {
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					if n.IsExported() {
						out = append(out, comment{ty.Name + "." + n.Name, file(f), f.Doc.Text() + " " + f.Comment.Text()})
					}
				}
			}
		}
		if it, ok := ty.Decl.Specs[0].(*ast.TypeSpec).Type.(*ast.InterfaceType); ok {
			for _, f := range it.Methods.List {
				for _, n := range f.Names {
					if n.IsExported() {
						out = append(out, comment{ty.Name + "." + n.Name, file(f), f.Doc.Text() + " " + f.Comment.Text()})
					}
				}
			}
		}
	}
	return out
}
