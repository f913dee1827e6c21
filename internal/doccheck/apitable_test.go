package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// apiDoc is the page whose tables TestAPITables holds to the code.
const apiDoc = "../../docs/api.md"

// pkgAPI is what a package exports, read from its source with go/parser.
type pkgAPI struct {
	name    string
	funcs   map[string]*ast.FuncType // top-level functions
	methods map[string]*ast.FuncType // "Type.Method"
	types   map[string]bool
	fields  map[string]bool // exported fields of exported structs, by name
}

// loadAPI parses the non-test Go files of the package at dir (relative to the module
// root), every build tag's included.
func loadAPI(t *testing.T, dir string) *pkgAPI {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("../..", dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("package %s: no Go files (%v)", dir, err)
	}
	api := &pkgAPI{funcs: map[string]*ast.FuncType{}, methods: map[string]*ast.FuncType{}, types: map[string]bool{}, fields: map[string]bool{}}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		api.name = file.Name.Name
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					api.funcs[d.Name.Name] = d.Type
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if ix, ok := recv.(*ast.IndexExpr); ok {
					recv = ix.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					api.methods[id.Name+"."+d.Name.Name] = d.Type
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					api.types[ts.Name.Name] = true
					if st, ok := ts.Type.(*ast.StructType); ok {
						for _, f := range st.Fields.List {
							for _, n := range f.Names {
								api.fields[n.Name] = n.IsExported()
							}
						}
					}
				}
			}
		}
	}
	return api
}

// params lists a function's parameters as (name, type) pairs, one per name, the
// variadic one's type written "...T".
func params(ft *ast.FuncType) [][2]string {
	var out [][2]string
	for _, f := range ft.Params.List {
		typ := types.ExprString(f.Type)
		if len(f.Names) == 0 {
			out = append(out, [2]string{"", typ})
		}
		for _, n := range f.Names {
			out = append(out, [2]string{n.Name, typ})
		}
	}
	return out
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	// A reference the tables make: Name, Name(args), (*T).Name, (T).Name(args), pkg.Name(args).
	reference = regexp.MustCompile(`^(?:\((\*?)(\w+)\)\.)?(?:(\w+)\.)?([A-Z]\w*)(?:\((.*)\))?$`)
)

// checkRef reports why ref does not name something pkg exports with that signature, or "".
// A trailing variadic parameter may be left out, as in a call. With strict, each argument
// written must match its parameter: its name (or a word of its type's name: "client" for a
// redis.UniversalClient), its type with or without pointer and package qualifier, "T{…}"
// for a T, "name..." for a variadic; "…" stands for anything. Without strict (calls
// written as Go in prose), only the count is held.
func checkRef(pkgs map[string]*pkgAPI, pkg *pkgAPI, ref string, strict bool) string {
	m := reference.FindStringSubmatch(ref)
	if m == nil {
		return ""
	}
	recv, qual, name, args := m[2], m[3], m[4], m[5]
	if qual != "" {
		q, ok := pkgs[qual]
		if !ok {
			return "" // a field path (AppSpec.Probes) or a package the page does not list
		}
		pkg = q
	}
	var ft *ast.FuncType
	switch {
	case recv != "":
		ft = pkg.methods[recv+"."+name]
	case pkg.funcs[name] != nil:
		ft = pkg.funcs[name]
	default:
		for k, f := range pkg.methods {
			if strings.HasSuffix(k, "."+name) {
				ft = f
			}
		}
	}
	hasArgs := strings.HasSuffix(ref, ")")
	if ft == nil {
		if (pkg.types[name] || pkg.fields[name]) && !hasArgs {
			return ""
		}
		return fmt.Sprintf("%s: %s exports no %s", ref, pkg.name, name)
	}
	if !hasArgs {
		return ""
	}
	var written []string
	if strings.TrimSpace(args) != "" {
		for _, a := range strings.Split(args, ",") {
			written = append(written, strings.TrimSpace(a))
		}
	}
	have := params(ft)
	if slices.Contains(written, "…") || slices.Contains(written, "...") {
		return ""
	}
	variadic := len(have) > 0 && strings.HasPrefix(have[len(have)-1][1], "...")
	if len(written) != len(have) && !(variadic && len(written) == len(have)-1) {
		return fmt.Sprintf("%s: %d arguments written, %s.%s takes %d %v", ref, len(written), pkg.name, name, len(have), have)
	}
	if !strict {
		return ""
	}
	for i, a := range written {
		n, typ := have[i][0], have[i][1]
		if !argMatches(a, n, typ) {
			return fmt.Sprintf("%s: argument %d is %q, the code's is %s %s", ref, i+1, a, n, typ)
		}
	}
	return ""
}

// unqualified drops the pointer, the variadic dots and package qualifiers from a type:
// "...httpentry.Option" is "Option", "*redis.Client" is "Client".
func unqualified(typ string) string {
	typ = strings.TrimLeft(typ, "*.")
	if i := strings.LastIndex(typ, "."); i >= 0 && !strings.ContainsAny(typ, "( ") {
		typ = typ[i+1:]
	}
	return typ
}

func argMatches(a, name, typ string) bool {
	a = strings.TrimSuffix(a, "{…}")
	variadic := strings.HasPrefix(typ, "...")
	switch {
	case variadic && (a == name+"..." || a == "..."+unqualified(typ) || a == typ):
		return true
	case variadic:
		return false
	case a == name || a == typ || unqualified(a) == unqualified(typ):
		return true
	}
	// A descriptive word for the value: "client" for a redis.UniversalClient.
	return a == strings.ToLower(a) && strings.HasSuffix(strings.ToLower(unqualified(typ)), a)
}

// TestAPITables holds docs/api.md's tables to the source: every constructor, function,
// method and option the package table names exists with the arguments written; every
// exported With… function of a listed package appears in its options; every option of
// the shared-names table takes the type written, in every listed package that has it;
// and every `pkg.Func(args)` the page mentions has those arguments.
func TestAPITables(t *testing.T) {
	raw, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)

	// The package table: | `dir` | constructors | options |.
	type pkgRow struct{ dir, ctors, opts string }
	var rows []pkgRow
	pkgs := map[string]*pkgAPI{} // by package name, for qualified references
	byDir := map[string]*pkgAPI{}
	inTable := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "| package | constructor | options |") {
			inTable = true
			continue
		}
		if inTable && !strings.HasPrefix(l, "|") {
			break
		}
		if !inTable || strings.HasPrefix(l, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if len(cells) != 3 {
			t.Fatalf("api.md: row %q has %d cells, want 3", l, len(cells))
		}
		r := pkgRow{strings.Trim(cells[0], "`"), cells[1], cells[2]}
		rows = append(rows, r)
		api := loadAPI(t, r.dir)
		byDir[r.dir], pkgs[api.name] = api, api
	}
	if len(rows) < 10 {
		t.Fatalf("api.md: found %d rows of the package table; has its header changed?", len(rows))
	}

	for _, dir := range publicPackages(t) {
		if byDir[dir] == nil {
			t.Errorf("api.md, package table: public package %s has no row", dir)
		}
	}
	for _, r := range rows {
		api := byDir[r.dir]
		for _, cell := range []string{r.ctors, r.opts} {
			for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
				if why := checkRef(pkgs, api, m[1], true); why != "" {
					t.Errorf("api.md, package table, %s: %s", r.dir, why)
				}
			}
		}
		var listed []string
		for _, m := range backticked.FindAllStringSubmatch(r.opts, -1) {
			listed = append(listed, strings.SplitN(m[1], "(", 2)[0])
		}
		for name := range api.funcs {
			if strings.HasPrefix(name, "With") && !slices.Contains(listed, name) {
				t.Errorf("api.md, package table, %s: option %s is exported but not listed", r.dir, name)
			}
		}
	}

	// The shared-names table: | `WithX` | `type` | meaning |.
	shared := regexp.MustCompile("(?m)^\\| `(With\\w+)` \\| `([^`]+)` \\|")
	found := shared.FindAllStringSubmatch(doc, -1)
	if len(found) < 3 {
		t.Fatalf("api.md: found %d rows of the option table; has its shape changed?", len(found))
	}
	for _, m := range found {
		name, typ, seen := m[1], m[2], false
		for _, r := range rows {
			ft := byDir[r.dir].funcs[name]
			if ft == nil {
				continue
			}
			seen = true
			// Inside the package that declares it, the type is unqualified.
			own := strings.TrimPrefix(typ, path.Base(r.dir)+".")
			if p := params(ft); len(p) != 1 || (p[0][1] != typ && p[0][1] != own) {
				t.Errorf("api.md, option table: %s.%s takes %v, the table says %s", r.dir, name, p, typ)
			}
		}
		if !seen {
			t.Errorf("api.md, option table: no listed package exports %s", name)
		}
	}

	// Calls written anywhere on the page: `pkg.Func(args)` of a listed package.
	call := regexp.MustCompile(`\b(\w+)\.([A-Z]\w*)\(([^()]*)\)`)
	for _, m := range backticked.FindAllStringSubmatch(doc, -1) {
		for _, c := range call.FindAllStringSubmatch(m[1], -1) {
			if _, ok := pkgs[c[1]]; !ok {
				continue
			}
			if why := checkRef(pkgs, nil, c[0], false); why != "" {
				t.Errorf("api.md: %s", why)
			}
		}
	}
}

// publicPackages lists the directories of the module holding a package a user imports:
// every directory with non-test Go files, outside internal/, the commands, the
// benchmarks' own module, the tools and the example's generated API (api/).
func publicPackages(t *testing.T) []string {
	t.Helper()
	var out []string
	skip := []string{"internal", "cmd", "bench", "tools", "api", "testdata", "proto", "scripts", "deploy", "docs"}
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || slices.Contains(skip, d.Name())) {
				return filepath.SkipDir
			}
			return nil
		}
		if dir := filepath.Dir(rel); strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") && dir != "." && !slices.Contains(out, dir) {
			out = append(out, filepath.ToSlash(dir))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
