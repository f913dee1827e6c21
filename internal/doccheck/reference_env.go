package doccheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// readCalls are the environment variables passed to a function whose name says it
// reads the environment: os.Getenv, os.LookupEnv, a lookup func, readToken ….
func (p *pkgInfo) readCalls() map[string]bool {
	reader := regexp.MustCompile(`(?i)env|lookup|token`)
	seen := map[string]bool{}
	str := func(e ast.Expr) string {
		switch e := e.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING {
				return s
			}
		case *ast.Ident:
			return p.consts[e.Name]
		}
		return ""
	}
	for _, f := range p.files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name := ""
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if !reader.MatchString(name) || name == "AddEnvf" {
				return true
			}
			for _, a := range call.Args {
				if s := str(a); envString.MatchString(s) {
					seen[s] = true
				}
			}
			return true
		})
	}
	return seen
}

// readEnv are the environment variables the package's code reads, and those it
// pairs with a Config field.
func (p *pkgInfo) readEnv() []string {
	seen := map[string]bool{}
	for e := range p.reads {
		seen[e] = true
	}
	for _, t := range p.configs {
		for _, f := range t.fields {
			for _, e := range envName.FindAllString(f.env, -1) {
				if p.strs[e] {
					seen[e] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for e := range seen {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

// writeEnv writes the table of every variable a public package reads: the Config
// fields it sets, or else the first sentence of the package's comments naming it.
func writeEnv(b *bytes.Buffer, pkgs []*pkgInfo) {
	type row struct{ env, pkg, what string }
	var rows []row
	for _, p := range pkgs {
		for _, e := range p.readEnv() {
			var fields []string
			for _, q := range pkgs {
				for _, t := range q.configs {
					for _, f := range t.fields {
						if strings.Contains(f.env, "`"+e+"`") {
							fields = append(fields, fmt.Sprintf("`%s.%s.%s`", q.name, t.name, f.name))
						}
					}
				}
			}
			what := ""
			if len(fields) > 0 {
				what = "sets " + strings.Join(fields, ", ")
			} else {
				what = p.sentenceNaming(e)
			}
			rows = append(rows, row{e, p.path, what})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].env < rows[j].env })
	for i := 1; i < len(rows); i++ {
		if rows[i].env == rows[i-1].env && rows[i].what == rows[i-1].what {
			rows[i-1].pkg += "`, `" + strings.TrimPrefix(rows[i].pkg, Module+"/")
			rows = append(rows[:i], rows[i+1:]...)
			i--
		}
	}
	b.WriteString("| Variable | Read by | What it does |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| `%s` | `%s` | %s |\n", r.env, strings.TrimPrefix(r.pkg, Module+"/"), cell(r.what))
	}
	b.WriteString("\n")
}

// sentenceNaming says what v does in words of the package: the first sentence of
// an exported declaration's doc comment that names v or a constant holding it, else
// the doc of the constant holding it, else the doc of the function that reads it;
// cut to 200 bytes.
func (p *pkgInfo) sentenceNaming(v string) string {
	names := []string{regexp.QuoteMeta(v)}
	for n, val := range p.consts {
		if val == v {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	word := regexp.MustCompile(`\b(?:` + strings.Join(names, "|") + `)\b`)
	first := func(doc *ast.CommentGroup, match bool) string {
		for _, s := range sentences(strings.Join(strings.Fields(doc.Text()), " ")) {
			if !match || word.MatchString(s) {
				if len(s) > 200 {
					s = strings.TrimRightFunc(s[:strings.LastIndex(s[:200], " ")], func(r rune) bool { return r == ',' || r == ':' }) + " …"
				}
				return s
			}
		}
		return ""
	}
	var docs, constDocs, readerDocs []*ast.CommentGroup
	for _, f := range p.files {
		if f.Doc != nil {
			docs = append(docs, f.Doc)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && d.Doc != nil {
					docs = append(docs, d.Doc)
				}
				if d.Doc != nil && d.Body != nil && word.MatchString(nodeText(d.Body)) {
					readerDocs = append(readerDocs, d.Doc)
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					var doc *ast.CommentGroup
					exported, holds := false, false
					switch sp := sp.(type) {
					case *ast.ValueSpec:
						doc = sp.Doc
						for i, n := range sp.Names {
							exported = exported || n.IsExported()
							if i < len(sp.Values) && word.MatchString(nodeText(sp.Values[i])+" "+n.Name) {
								holds = true
							}
						}
					case *ast.TypeSpec:
						doc, exported = sp.Doc, sp.Name.IsExported()
					}
					if doc == nil {
						doc = d.Doc
					}
					if doc != nil && exported {
						docs = append(docs, doc)
					}
					if doc != nil && holds {
						constDocs = append(constDocs, doc)
					}
				}
			}
		}
	}
	for _, d := range docs {
		if s := first(d, true); s != "" {
			return s
		}
	}
	for _, group := range [][]*ast.CommentGroup{constDocs, readerDocs} {
		for _, d := range group {
			if s := first(d, false); s != "" {
				return s
			}
		}
	}
	return ""
}

// nodeText is the literals and names in n, space-separated: enough to find a
// variable's name or a constant's.
func nodeText(n ast.Node) string {
	var b strings.Builder
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			b.WriteString(strings.Trim(n.Value, "`\"") + " ")
		case *ast.Ident:
			b.WriteString(n.Name + " ")
		}
		return true
	})
	return b.String()
}
