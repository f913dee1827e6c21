// Command apicount prints the exported identifiers of each public package under a module
// root (internal/, cmd/, testdata/ and main packages skipped; _test.go files skipped):
// top = exported top-level consts, vars, types and funcs; all = top + exported methods
// of exported types + exported fields of exported structs + exported methods of
// exported interfaces.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	root := os.Args[1]
	type count struct{ top, all int }
	res := map[string]*count{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, s := range strings.Split(rel, string(filepath.Separator)) {
			if s == "internal" || s == "cmd" || s == "testdata" || (strings.HasPrefix(s, ".") && s != ".") {
				return filepath.SkipDir
			}
		}
		pkgs := parseDir(p)
		for name, files := range pkgs {
			if name == "main" {
				continue
			}
			c := &count{}
			for _, f := range files {
				for _, decl := range f.Decls {
					switch d := decl.(type) {
					case *ast.FuncDecl:
						if !d.Name.IsExported() {
							continue
						}
						if d.Recv == nil {
							c.top++
							c.all++
							continue
						}
						t := d.Recv.List[0].Type
						if s, ok := t.(*ast.StarExpr); ok {
							t = s.X
						}
						if ix, ok := t.(*ast.IndexExpr); ok {
							t = ix.X
						}
						if ix, ok := t.(*ast.IndexListExpr); ok {
							t = ix.X
						}
						if id, ok := t.(*ast.Ident); ok && id.IsExported() {
							c.all++
						}
					case *ast.GenDecl:
						for _, spec := range d.Specs {
							switch s := spec.(type) {
							case *ast.ValueSpec:
								for _, n := range s.Names {
									if n.IsExported() {
										c.top++
										c.all++
									}
								}
							case *ast.TypeSpec:
								if !s.Name.IsExported() {
									continue
								}
								c.top++
								c.all++
								var fl *ast.FieldList
								switch t := s.Type.(type) {
								case *ast.StructType:
									fl = t.Fields
								case *ast.InterfaceType:
									fl = t.Methods
								}
								if fl == nil {
									continue
								}
								for _, fld := range fl.List {
									for _, n := range fld.Names {
										if n.IsExported() {
											c.all++
										}
									}
								}
							}
						}
					}
				}
			}
			res[filepath.ToSlash(rel)] = c
		}
		return nil
	})
	keys := make([]string, 0, len(res))
	for k := range res {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var top, all int
	for _, k := range keys {
		fmt.Printf("%-32s %4d %4d\n", k, res[k].top, res[k].all)
		top += res[k].top
		all += res[k].all
	}
	fmt.Printf("%-32s %4d %4d\n", "total", top, all)
}

// parseDir parses the non-test Go files of dir, grouped by package name.
func parseDir(dir string) map[string][]*ast.File {
	entries, _ := os.ReadDir(dir)
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, 0)
		if err != nil {
			continue
		}
		pkgs[f.Name.Name] = append(pkgs[f.Name.Name], f)
	}
	return pkgs
}
