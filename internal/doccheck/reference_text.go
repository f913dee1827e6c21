package doccheck

// How the reference reads a field's doc: the sentence that states its default, and an expression as source text.

import (
	"bytes"
	"go/ast"
	"strings"
)

// defaultOf returns the sentence of a field's doc that states its default, and
// the next one too when the first says only that the field is required or the
// next begins with the default itself ("Default 5s.").
func defaultOf(doc string) string {
	var out []string
	for _, s := range sentences(doc) {
		if !defaultRe.MatchString(s) {
			continue
		}
		if len(out) == 1 && !strings.HasPrefix(out[0], "Required") && !strings.HasPrefix(s, "Default") {
			break
		}
		if s, ok := strings.CutSuffix(s, ";"); ok {
			out = append(out, s+".")
		} else {
			out = append(out, s)
		}
		if len(out) == 2 {
			break
		}
	}
	return strings.Join(out, " ")
}

// sentences splits text after each ". " or "; " not inside parentheses or quotes.
func sentences(text string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case (c == '.' || c == ';') && depth == 0 && (i+1 == len(text) || text[i+1] == ' '):
			if i+1 == len(text) || (i+2 < len(text) && (text[i+2] >= 'A' && text[i+2] <= 'Z' || text[i+2] >= '0' && text[i+2] <= '9' || c == ';')) {
				out = append(out, strings.TrimSpace(text[start:i+1]))
				start = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(text[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

func exprString(e ast.Expr) string {
	var b bytes.Buffer
	var write func(ast.Expr)
	write = func(e ast.Expr) {
		switch e := e.(type) {
		case *ast.Ident:
			b.WriteString(e.Name)
		case *ast.SelectorExpr:
			write(e.X)
			b.WriteString("." + e.Sel.Name)
		case *ast.StarExpr:
			b.WriteString("*")
			write(e.X)
		case *ast.ArrayType:
			b.WriteString("[]")
			write(e.Elt)
		case *ast.MapType:
			b.WriteString("map[")
			write(e.Key)
			b.WriteString("]")
			write(e.Value)
		case *ast.FuncType:
			b.WriteString("func(…)")
			if e.Results != nil {
				b.WriteString(" …")
			}
		case *ast.InterfaceType:
			b.WriteString("interface{…}")
		case *ast.ChanType:
			b.WriteString("chan ")
			write(e.Value)
		case *ast.IndexExpr:
			write(e.X)
			b.WriteString("[")
			write(e.Index)
			b.WriteString("]")
		case *ast.Ellipsis:
			b.WriteString("...")
			write(e.Elt)
		default:
			b.WriteString("…")
		}
	}
	write(e)
	return b.String()
}
