package prestop_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/prestop"
)

const header = "X-Test-Token"

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func request(token ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/prestop", nil)
	for _, t := range token {
		r.Header.Add(header, t)
	}
	return r
}

func TestReadTokenAndCheck(t *testing.T) {
	good := strings.Repeat("a", prestop.MinTokenLen)
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("\n "+good+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		lookup  func(string) (string, bool)
		problem string // the field named, "" for none
		set     bool
	}{
		{"none", env(), "", false},
		{"inline", env("TOK", good), "", true},
		{"from a file, trimmed", env("TOK_FILE", file), "", true},
		{"both", env("TOK", good, "TOK_FILE", file), "TOK, TOK_FILE", false},
		{"too short", env("TOK", "short"), "TOK", false},
		{"too long", env("TOK", strings.Repeat("a", 65)), "TOK", false},
		{"not visible ASCII", env("TOK", good+" x"), "TOK", false},
		{"a missing file", env("TOK_FILE", filepath.Join(dir, "missing")), "TOK_FILE", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l fault.Problems
			tok := prestop.ReadToken(c.lookup, "TOK", "TOK_FILE", header, 64, &l)
			err := l.Err()
			switch {
			case c.problem == "" && err != nil:
				t.Fatalf("problems %v, want none", err)
			case c.problem != "" && (err == nil || !strings.Contains(err.Error(), c.problem)):
				t.Fatalf("problems %v, want one naming %s", err, c.problem)
			case err != nil && strings.Contains(err.Error(), good):
				t.Fatalf("the problem quotes the token: %v", err)
			}
			if tok.Set() != c.set {
				t.Fatalf("Set = %v, want %v", tok.Set(), c.set)
			}
			want := map[bool]string{true: "", false: "not_configured"}[c.set]
			if got := tok.Check(request(good)); got != want {
				t.Errorf("Check(right token) = %q, want %q", got, want)
			}
			if !c.set {
				return
			}
			for _, r := range []struct {
				req  *http.Request
				want string
			}{
				{request(), "no_credential"},
				{request(""), "no_credential"},
				{request(good, good), "no_credential"},
				{request(good + "b"), "wrong_credential"},
			} {
				if got := tok.Check(r.req); got != r.want {
					t.Errorf("Check(%v) = %q, want %q", r.req.Header[header], got, r.want)
				}
			}
		})
	}
}

func TestLogRefusalSpacesLines(t *testing.T) {
	var l fault.Problems
	tok := prestop.ReadToken(env(), "TOK", "TOK_FILE", header, 64, &l)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if ok, n := tok.LogRefusal(t0); !ok || n != 0 {
		t.Fatalf("first refusal: log %v, %d not logged; want logged, 0", ok, n)
	}
	for i := range 3 {
		if ok, _ := tok.LogRefusal(t0.Add(time.Duration(i+1) * time.Second)); ok {
			t.Fatalf("refusal %d within 10s was logged", i+2)
		}
	}
	if ok, n := tok.LogRefusal(t0.Add(10 * time.Second)); !ok || n != 3 {
		t.Fatalf("refusal 10s later: log %v, %d not logged; want logged, 3", ok, n)
	}
}

func TestClip(t *testing.T) {
	if got := prestop.Clip("curl/8"); got != "curl/8" {
		t.Errorf("Clip(short) = %q", got)
	}
	if got := prestop.Clip(strings.Repeat("x", 300)); len(got) != 256+len("…") {
		t.Errorf("Clip(300 bytes) is %d bytes", len(got))
	}
}
