package fault

import (
	"net/url"
	"regexp"
	"strings"
)

// dsnSecret matches the value of a secret in a key=value connection string
// ("password=s3cret", "sslpassword='a b'"), quoted or not.
var dsnSecret = regexp.MustCompile(`(?i)\b((?:ssl)?password|passwd|pwd|secret|token)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// userinfo matches the credentials of anything shaped like scheme://user:pass@host,
// including strings too malformed for net/url to parse.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)?([^\s/@:,]+):([^\s/@]*)@`)

// Redact returns s with every password it can recognise replaced by "xxxxx": the
// password of a URL (redis://user:pass@host, postgres://…), of user:pass@host entries
// in a list such as a broker list, and the value of password=, secret= and token=
// pairs in a key=value DSN. It is meant for values echoed in errors and logs, where a
// false positive costs a few characters and a miss costs a credential. Redact does
// not parse s and never fails; s without credentials comes back unchanged.
//
// Deprecated: Redact scrubs after the fact and misses what it does not recognise
// (the module no longer uses it); build errors that never quote a
// credential-bearing value instead: URLProblem, Secret, a reason naming the variable.
func Redact(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return u.Redacted()
		}
	}
	s = userinfo.ReplaceAllStringFunc(s, func(m string) string {
		sub := userinfo.FindStringSubmatch(m)
		if sub[3] == "" && !strings.Contains(m, ":") {
			return m
		}
		return sub[1] + sub[2] + ":xxxxx@"
	})
	return dsnSecret.ReplaceAllString(s, "${1}=xxxxx")
}
