package doccheck

// The exit codes of the reference: host's Exit* constants, resolved through the constants they name.

import (
	"fmt"
	"go/ast"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

type exitCode struct{ name, value, doc string }

// exitCodes are package host's Exit* constants with their values, resolved through
// another package's constant when one is named, sorted by value.
func exitCodes(root string, pkgs []*pkgInfo) ([]exitCode, error) {
	var host *pkgInfo
	byName := map[string]*pkgInfo{}
	for _, p := range pkgs {
		byName[p.name] = p
		if p.path == Module+"/host" {
			host = p
		}
	}
	if host == nil {
		return nil, fmt.Errorf("no package host under %s", root)
	}
	var resolve func(p *pkgInfo, e ast.Expr) string
	resolve = func(p *pkgInfo, e ast.Expr) string {
		switch e := e.(type) {
		case *ast.BasicLit:
			return e.Value
		case *ast.Ident:
			if v := constExpr(p, e.Name); v != nil {
				return resolve(p, v)
			}
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && byName[x.Name] != nil {
				if v := constExpr(byName[x.Name], e.Sel.Name); v != nil {
					return resolve(byName[x.Name], v)
				}
			}
		}
		return exprString(e)
	}
	var out []exitCode
	for _, f := range host.files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Exit") || !n.IsExported() || i >= len(vs.Values) {
						continue
					}
					doc := strings.Join(strings.Fields(vs.Doc.Text()+" "+vs.Comment.Text()), " ")
					doc = strings.TrimPrefix(doc, n.Name+":")
					doc = strings.TrimPrefix(doc, n.Name+" ")
					out = append(out, exitCode{name: n.Name, value: resolve(host, vs.Values[i]), doc: strings.TrimSpace(doc)})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := strconv.Atoi(out[i].value)
		b, _ := strconv.Atoi(out[j].value)
		return a < b
	})
	return out, nil
}

// constExpr is the expression a package-level constant of p is declared with.
func constExpr(p *pkgInfo, name string) ast.Expr {
	for _, f := range p.files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if n.Name == name && i < len(vs.Values) {
							return vs.Values[i]
						}
					}
				}
			}
		}
	}
	return nil
}
