package rediskit

import (
	"errors"
	"strings"
	"testing"

	"github.com/servicewright/servicewright/fault"
)

func TestParseURLNamesTheProblemNotTheValue(t *testing.T) {
	const pw = "s3cretpw"
	for _, tc := range []struct{ url, want string }{
		{"redis://:" + pw + "@[bad/", "missing ']'"},
		{"redis://:" + pw + "@127.0.0.1:99999/0", "port must be a number from 1 to 65535"},
		{"redis://:" + pw + "@127.0.0.1:0/0", "port must be a number from 1 to 65535"},
		{"rediss://:" + pw + "@::1:6379/0", "IPv6 address goes in brackets"},
		{"redis://:%zz" + pw + "@h:6379", "percent-escape"},
		{"http://u:" + pw + "@h:6379", "scheme must be redis, rediss (TLS) or unix"},
		{"redis://h:6379/x?password=" + pw, "not a valid Redis URL"},
		{pw, "missing scheme"},
	} {
		_, err := ParseURL("REDIS_URL", tc.url)
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok || ce.Problems[0].Field != "REDIS_URL" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseURL(%q) = %v, want a ConfigError naming REDIS_URL saying %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("ParseURL(%q) echoes the password: %v", tc.url, err)
		}
	}
	for _, url := range []string{"redis://:" + pw + "@[::1]:6379/0", "rediss://default:p%40" + pw + "@h:6380/1", "unix:///run/redis.sock?db=2"} {
		o, err := ParseURL("REDIS_URL", url)
		if err != nil || !o.ContextTimeoutEnabled {
			t.Errorf("ParseURL(%q) = %v, %v; want options with ContextTimeoutEnabled", url, o, err)
		}
	}
}
