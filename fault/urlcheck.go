package fault

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// URLProblem says why raw is not a well-formed URL, in words that never quote raw:
// a value such as REDIS_URL may carry a password anywhere (the user, the password,
// a query parameter, a mistyped host), and net/url's own errors quote the part they
// stop at. It returns "" when raw parses as scheme://… and its port, when it has
// one, is a number from 1 to 65535.
//
// URLProblem checks syntax only: it knows nothing of a scheme's rules. Callers add
// those, in words of their own that do not quote the value either.
func URLProblem(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return urlErrorReason(err)
	}
	if u.Scheme == "" || u.Opaque != "" {
		return "missing scheme (want scheme://host:port/…)"
	}
	if u.Host == "" {
		return ""
	}
	if !strings.HasPrefix(u.Host, "[") && strings.Count(u.Host, ":") > 1 {
		return "malformed host: an IPv6 address goes in brackets, as in [::1]:port"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "port must be a number from 1 to 65535"
		}
	}
	return ""
}

// urlErrorReason maps an error of url.Parse to a fixed description. It reads the
// error to classify it and returns only text of its own.
func urlErrorReason(err error) string {
	if _, ok := errors.AsType[url.EscapeError](err); ok {
		return "malformed percent-escape: % must be followed by two hex digits (write %25 for a literal %)"
	}
	if _, ok := errors.AsType[url.InvalidHostError](err); ok {
		return "invalid character in the host"
	}
	msg := err.Error()
	for _, c := range []struct{ in, reason string }{
		{"missing ']'", "malformed IPv6 host: missing ']' (write [::1]:port)"},
		{"invalid port", "port must be a number from 1 to 65535"},
		{"control character", "contains a control character"},
		{"invalid userinfo", "the user or password holds a character that must be percent-escaped"},
		{"missing protocol scheme", "missing scheme (want scheme://host:port/…)"},
		{"first path segment", "missing scheme (want scheme://host:port/…)"},
	} {
		if strings.Contains(msg, c.in) {
			return c.reason
		}
	}
	return "not a URL"
}
