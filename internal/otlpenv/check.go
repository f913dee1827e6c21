// Package otlpenv checks the OTEL_EXPORTER_OTLP_* variables that may carry a
// credential — the header lists and the endpoints — before OpenTelemetry's exporters
// read them.
//
// The exporters parse these variables themselves and, on a malformed value, log it
// (the whole header entry, its key or its value) through OpenTelemetry's
// diagnostics and carry on without the header: a service would start unauthenticated
// with its token in the log. Check refuses such a value first, as a problem naming
// the variable and the entry, in words that never quote the value.
package otlpenv

import (
	"net/url"
	"strings"

	"github.com/servicewright/servicewright/fault"
)

// Signals are the per-signal infixes of the OTLP variables, "" for the shared one.
var signals = [...]string{"", "TRACES_", "METRICS_", "LOGS_"}

// Check validates every OTEL_EXPORTER_OTLP_[SIGNAL_]HEADERS and
// OTEL_EXPORTER_OTLP_[SIGNAL_]ENDPOINT variable that lookup finds set, recording
// each problem in l under the variable's name. A value that is empty once trimmed is
// unset, as OpenTelemetry reads it.
//
// A header list is the specification's format, W3C Baggage without properties:
// key=value entries separated by commas, each key an HTTP header name, each value
// percent-decoded. An endpoint is an http or https URL without user info
// (OpenTelemetry drops it silently: the credential would not be sent).
//
// Check reads the variables only; it does not say whether an exporter will be built.
func Check(lookup func(string) (string, bool), l *fault.Problems) {
	for _, s := range signals {
		name := "OTEL_EXPORTER_OTLP_" + s + "HEADERS"
		if v, _ := lookup(name); strings.TrimSpace(v) != "" {
			checkHeaders(name, strings.TrimSpace(v), l)
		}
		name = "OTEL_EXPORTER_OTLP_" + s + "ENDPOINT"
		if v, _ := lookup(name); strings.TrimSpace(v) != "" {
			checkEndpoint(name, strings.TrimSpace(v), l)
		}
	}
}

// checkHeaders reports each malformed entry of a header list by its position.
func checkHeaders(name, v string, l *fault.Problems) {
	for i, entry := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(entry, "=")
		switch {
		case !ok:
			l.AddEnvf("", name, "entry %d has no '=' (want key=value,key2=value2)", i+1)
		case !headerName(strings.TrimSpace(k)):
			l.AddEnvf("", name, "entry %d: the key must be an HTTP header name (letters, digits and %s)", i+1, "!#$%&'*+-.^_`|~")
		default:
			dec, err := url.PathUnescape(val)
			switch {
			case err != nil:
				l.AddEnvf("", name, "entry %d: malformed percent-escape in the value (%s)", i+1, "% must be followed by two hex digits; write %25 for a literal %")
			case hasControl(dec):
				l.AddEnvf("", name, "entry %d: the value holds a control character once decoded", i+1)
			}
		}
	}
}

// checkEndpoint reports a malformed endpoint, one that is not http or https, and
// one with user info.
func checkEndpoint(name, v string, l *fault.Problems) {
	if reason := fault.URLProblem(v); reason != "" {
		l.AddEnvf("", name, "not a URL: %s", reason)
		return
	}
	u, _ := url.Parse(v) // URLProblem has parsed it
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		l.AddEnvf("", name, "the scheme must be http or https")
	case u.User != nil:
		l.AddEnvf("", name, "must not carry user info (user:password@): OpenTelemetry does not send it; "+
			"put credentials in OTEL_EXPORTER_OTLP_HEADERS")
	}
}

// headerName reports whether k is an HTTP token (RFC 9110), as OpenTelemetry
// requires of a header key.
func headerName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f })
}
